"""Stage 8 of the pipeline, deliver: the bytes of a run as they are made (or of its cache entry),
the run's end (success, failure, cancel) and the cache entry a finished miss leaves behind.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.conf import settings

from tts.audio.encode import make_encoder
from tts.catalogue import get_registry
from tts.errors import SynthesisCancelled, SynthesisError
from tts.inference.engine import EngineError, InputTooLong
from tts.models import SynthesisRecord
from tts.synthesis.alignment.timeline import AlignmentTimeline
from tts.synthesis.cache.alignment import alignment_cache
from tts.synthesis.cache.audio import CachedAudio, audio_cache
from tts.synthesis.runs.record_audio import AudioSink
from tts.synthesis.runs.run import SynthesisRun
from tts.synthesis.stages.engine import encoded_segments, engine_unavailable
from tts.synthesis.stages.lookup import serve_from_cache, store_cached_audio

logger = logging.getLogger(__name__)


def synthesis_iter_bytes(run: SynthesisRun) -> Iterator[bytes]:
    """Encoded audio, one piece per segment as soon as it is ready.

    Closing the generator early (a client that went away) stops before the
    next segment is synthesized and the run ends cancelled; an engine failure
    ends it failed. Either way the run refunds what was never synthesized.
    """
    if run.cached is not None and run.segment_source is None:
        yield from iter_cached(run, run.cached)
        return
    if run.cached is not None:  # a live stream: its text is still arriving, the entry cannot answer it
        run.not_cached()
    status = SynthesisRecord.Status.CANCELLED
    error_code = ""
    encoder = None
    timeline: AlignmentTimeline | None = None
    cache = False
    try:
        try:
            engine = get_registry().get(run.spec)
        except EngineError as exc:
            status, error_code = SynthesisRecord.Status.FAILED, "engine_unavailable"
            raise engine_unavailable() from exc
        req = run.request
        live = run.segment_source is not None
        # Live streams are not cached (their text was not known up front).
        cache = bool(run.cache_key and req.enable_logging and not live)
        # One copy of what is sent, for those who need it at the end: the history file, the caller
        # of a whole file, the cache (only while it is small enough to be an entry).
        store = req.enable_logging and settings.TTS_STORE_AUDIO
        limit = None if store or run.whole else settings.TTS_AUDIO_CACHE_MAX_ENTRY_BYTES
        encoder = make_encoder(req.output_format, engine.sample_rate)
        # A live stream's pieces each have their own offsets: its alignment follows the spoken text.
        timeline = (
            AlignmentTimeline(None)
            if live
            else AlignmentTimeline.for_segments(run.spoken_text or req.text, run.segments)
        )
        run.start_encoding(encoder, AudioSink(keep=store or run.whole or cache, limit=limit), timeline)
        yield from encoded_segments(run, engine, timeline, live=live)
        status = SynthesisRecord.Status.SUCCESS
    except Exception as exc:
        if run.stop.is_set() and status == SynthesisRecord.Status.CANCELLED:
            # The client went away: the engine work it had queued was dropped (or stopped
            # between two engine calls) and surfaced here as an error. It is a cancel.
            raise SynthesisCancelled from exc
        if isinstance(exc, InputTooLong):
            # The engine's door: a segment the pipeline should never have made. Not the caller's to retry.
            status, error_code = SynthesisRecord.Status.FAILED, "input_too_long"
            logger.warning("synthesis %s refused at the engine's door: %s", run.record.pk, exc)
            raise SynthesisError(
                f"This request makes a segment of {exc.count} phoneme ids; an engine call takes at most "
                f"{exc.limit} (TTS_ENGINE_MAX_PHONEME_IDS).",
                code="input_too_long",
                status=422,
                field=run.request.text_field,
            ) from exc
        if isinstance(exc, EngineError):
            status, error_code = SynthesisRecord.Status.FAILED, "engine_error"
            logger.exception("synthesis %s failed in the engine", run.record.pk)
            raise SynthesisError(
                "The speech engine failed while synthesizing this request.",
                code="engine_error",
                status=503 if exc.retryable else 500,
                retry_after=5 if exc.retryable else None,
            ) from exc
        status = SynthesisRecord.Status.FAILED
        error_code = error_code or (exc.code if isinstance(exc, SynthesisError) else "internal_error")
        raise
    finally:
        if encoder is not None:
            encoder.close()
        if status != SynthesisRecord.Status.SUCCESS:
            run.finish(status, error_code=error_code)
        elif run.succeed() and cache and encoder is not None and timeline is not None:
            audio = run.seal_audio()
            if audio is not None:
                # After the record: the entry names its stored file, which hits link to.
                stored = run.record.audio.name or ""
                audio_cache.put(run.cache_key, CachedAudio(audio, encoder.format, run.audio_seconds, stored))
                alignment_cache.put(run.cache_key, timeline.as_json())


def iter_cached(run: SynthesisRun, cached: CachedAudio) -> Iterator[bytes]:
    """A cache hit, sent like a stream: no engine; characters and history as for a synthesis."""
    serve_from_cache(run, cached)
    success = False
    try:
        for piece in cached.pieces():
            run.mark_first_byte()
            yield piece
        run.cached_whole(cached.duration_s)
        success = True
    finally:
        if success:
            run.succeed(audio_saved=store_cached_audio(run, cached))
        else:
            run.cached_cut_short()
            run.cancel()
