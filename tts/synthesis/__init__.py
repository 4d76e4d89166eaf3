"""Synthesis: one request's text turned into audio, from the checked request to the bytes sent.

Owns the pipeline (``pipeline``: ``synthesis_prepare`` and ``synthesis_create``) and its
stages, each a module taking the previous stage's value (``stages``): ``parse`` ->
``resolve`` -> ``admit`` -> ``prepare`` -> ``lookup`` (the cache) -> ``open_run`` ->
``engine`` -> ``deliver``. Beside them: the run that owns a request's record and quota
(``run``), the audio cache and its alignment cache, stitching context, word and
character timestamps (``timestamps``, ``alignment``), live streams (``streaming``), the
fair engine scheduler and admission bounds, the record's audio file, the reaper of dead
runs and the shutdown drain, metrics, voice previews.

May import: the catalogue, pronunciation, models, accounts' quota and limits, inference,
text, audio and infra. Never jobs, usage, realtime or anything above them (APIs,
consumers, views).
"""

from tts.synthesis.alignment.timeline import AlignmentChunk, websocket_alignment
from tts.synthesis.alignment.voice_segments import voice_segments
from tts.synthesis.engine_time.admission import SynthesisAdmission
from tts.synthesis.engine_time.budget import engine_seconds_limit, job_engine_seconds_limit
from tts.synthesis.engine_time.fairness import segment_engine_seconds
from tts.synthesis.engine_time.scheduler import engine_scheduler
from tts.synthesis.live import (
    DEFAULT_CHUNK_SCHEDULE,
    ClientGone,
    RequestFactory,
    TextBuffer,
    UtteranceDriver,
    UtteranceSink,
    strict_sentence_ends,
)
from tts.synthesis.live.streaming import LiveUtterance, ThreadedStream, run_stream, stream_synthesis
from tts.synthesis.preview import PreviewUnavailable, voice_preview
from tts.synthesis.request import DialogueTurn, SynthesisRequest, dialogue_text, noise_variation
from tts.synthesis.runs.recovery import records_reap_stale, start_reaper
from tts.synthesis.runs.run import SynthesisRun
from tts.synthesis.runs.shutdown import drain, draining
from tts.synthesis.stages.deliver import synthesis_iter_bytes
from tts.synthesis.stages.engine import (
    ensure_engine,
    segment_params,
    speak_segment,
    synthesize_segment,
)
from tts.synthesis.stages.job import (
    PreparedJob,
    dialogue_job_prepare,
    dialogue_job_resolve,
    job_engine_budget,
    job_prepare,
    job_resolve,
)
from tts.synthesis.stages.parse import (
    output_format_for,
    readable_languages,
    segments_for,
    speaking_language,
    text_characters_valid,
)
from tts.synthesis.stages.pipeline import synthesis_create, synthesis_prepare
from tts.synthesis.stages.resolve import resolve_model_version

__all__ = [
    "DEFAULT_CHUNK_SCHEDULE",
    "AlignmentChunk",
    "ClientGone",
    "DialogueTurn",
    "LiveUtterance",
    "PreparedJob",
    "PreviewUnavailable",
    "RequestFactory",
    "SynthesisAdmission",
    "SynthesisRequest",
    "SynthesisRun",
    "TextBuffer",
    "ThreadedStream",
    "UtteranceDriver",
    "UtteranceSink",
    "dialogue_job_prepare",
    "dialogue_job_resolve",
    "dialogue_text",
    "drain",
    "draining",
    "engine_scheduler",
    "engine_seconds_limit",
    "ensure_engine",
    "job_engine_budget",
    "job_engine_seconds_limit",
    "job_prepare",
    "job_resolve",
    "noise_variation",
    "output_format_for",
    "readable_languages",
    "records_reap_stale",
    "resolve_model_version",
    "run_stream",
    "segment_engine_seconds",
    "segment_params",
    "segments_for",
    "speak_segment",
    "speaking_language",
    "start_reaper",
    "stream_synthesis",
    "strict_sentence_ends",
    "synthesis_create",
    "synthesis_iter_bytes",
    "synthesis_prepare",
    "synthesize_segment",
    "text_characters_valid",
    "voice_preview",
    "voice_segments",
    "websocket_alignment",
]
