"""Stage 5 of the pipeline, the cache: the request's key, the entry if there is one, what
the request must hold before it goes on (a concurrency place; an engine place on a miss),
and what a hit answers with (its format, duration and timings, its history file).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging

from django.conf import settings

from accounts.ratelimit import LimitExceeded
from tts.errors import SynthesisError
from tts.models import SynthesisRecord
from tts.synthesis.alignment.timeline import AlignmentTimeline
from tts.synthesis.cache.alignment import alignment_cache
from tts.synthesis.cache.audio import CachedAudio, CachedAudioEncoder, audio_cache, audio_cache_key
from tts.synthesis.runs.record_audio import storage_links_files, store_record_audio
from tts.synthesis.runs.run import SynthesisRun
from tts.synthesis.stages.values import Found, Prepared

logger = logging.getLogger(__name__)


def look_up(prepared: Prepared, *, whole: bool) -> Found:
    """The cache lookup, a concurrency slot (not for a whole-file hit), an engine place on a miss.

    ``whole``: the caller wants the whole file at once; a hit then needs no place (it is
    answered before any other request could wait on it)."""
    admitted = prepared.admitted
    resolved = admitted.resolved
    req, admission, context = resolved.request, admitted.admission, prepared.context
    dictionaries = resolved.dictionaries.versions if resolved.dictionaries is not None else None
    try:
        sides = (context.before, context.after) if context is not None else None
        cache_key = audio_cache_key(
            req,
            voice=resolved.voice,
            model_version=resolved.model_version,
            segments=prepared.segments,
            context=sides,
            dictionaries=dictionaries,
        )
        if cache_key is not None and resolved.turns:
            cache_key = dialogue_cache_key(cache_key, prepared)
        cached = audio_cache.get(cache_key)
        if cached is None or not whole:
            admission.hold_slot(tenant=req.tenant)
        if cached is None:
            admission.admit_engine()
    except LimitExceeded as exc:
        raise SynthesisError.from_limit(exc) from exc
    return Found(prepared, cache_key, cached, whole)


def dialogue_cache_key(key: str, prepared: Prepared) -> str:
    """A dialogue's key: the request's (its first voice's, its segments') with the voice of each turn
    and the turn of each segment, so the same texts in other voices are another entry."""
    turns = prepared.admitted.resolved.turns
    recipe = {
        "key": key,
        "voices": [[t.voice.pk, t.voice.voice_id, t.voice.speaker_index, list(t.voice.style_blend)] for t in turns],
        "turns": [seg.turn for seg in prepared.segments],
    }
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True, default=str).encode()).hexdigest()
    return f"{key}:dialogue:{digest}"


def answer_from_cache(run: SynthesisRun, cached: CachedAudio) -> None:
    """Fill in the final state of a whole-file hit's record (and its audio file) before it is written."""
    serve_from_cache(run, cached)
    run.cached_whole(cached.duration_s)
    run.mark_first_byte()
    run.final_fields(SynthesisRecord.Status.SUCCESS)
    store_cached_audio(run, cached)


def serve_from_cache(run: SynthesisRun, cached: CachedAudio) -> None:
    """What a hit answers with: the entry's format and duration, and its timings when asked for."""
    timeline = None
    if run.request.timestamps:
        stored = alignment_cache.get(run.cache_key)
        timeline = AlignmentTimeline.from_json(stored) if stored else None
    run.serve_cached(CachedAudioEncoder(cached.output_format, cached.duration_s), timeline)


def store_cached_audio(run: SynthesisRun, cached: CachedAudio) -> bool:
    """A hit's own history file: a link to the entry's file, else written. True if the record has one.

    When the entry's file is gone (its item was deleted) the bytes are written
    and the entry is pointed at this record's file, so later hits link again.
    Never raises: as for a synthesis, the answer and its record matter more
    than the stored copy.
    """
    if not (run.request.enable_logging and settings.TTS_STORE_AUDIO):
        return False
    record = run.record
    try:
        extension = cached.output_format.extension
        linked = store_record_audio(record, cached.audio, extension, share_from=cached.stored_name)
    except Exception:
        logger.exception("could not store the audio of history record %s", record.pk)
        record.audio.name = ""
        return False
    if not linked and storage_links_files(record.audio.storage):
        audio_cache.put(run.cache_key, dataclasses.replace(cached, stored_name=record.audio.name or ""))
    return True
