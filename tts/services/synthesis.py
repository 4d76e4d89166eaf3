"""The one synthesis pipeline every entry point uses (REST, streaming, WebSocket,
OpenAI, jobs, the playground). No HTTP here.

1. validate and resolve: voice visible to this tenant, model, limits;
2. text: SSML or plain -> normalize -> segments -> cost in characters;
3. admission and quota: rate limits (before the text work; with pronunciation
   dictionaries the concurrency slot too, before they are applied), a
   concurrency slot and an engine ticket, characters reserved in the
   transaction that inserts the pending record;
4. inference: segment by segment through the registry, first sentence first;
5. audio: resample and encode incrementally, yield bytes;
6. the end: the run's owner (``synthesis_run.SynthesisRun``) refunds what was
   not spoken, writes the record's final state and releases what it held.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future
from typing import Any, cast

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.quota import QuotaExceeded, Reservation, audio_seconds_limit, reserve_characters
from accounts.ratelimit import LimitExceeded
from infra.lean_insert import insert
from tts.audio.encode import make_encoder
from tts.inference.engine import Engine, EngineError, InputTooLong, SynthesisParams, derive_seed
from tts.inference.pacing import is_ahead
from tts.inference.work_pool import WorkCancelled
from tts.models import ModelVersion, SynthesisRecord, Voice
from tts.text.segment import Segment

from .admission import SynthesisAdmission, synthesis_admit
from .alignment_cache import alignment_cache
from .cache import CachedAudio, CachedAudioEncoder, audio_cache, audio_cache_key
from .engine_scheduler import engine_scheduler, queues_fairly
from .engines import get_registry, spec_for
from .history import AudioSink, discard_record_audio, storage_links_files, store_record_audio
from .pronunciation_apply import billed_characters, dictionaries_for, record_dictionary_uses
from .recovery import heartbeats
from .shutdown import refuse_if_draining, stop_if_aborted
from .stitching import context_characters, stitching_context
from .synthesis_run import SynthesisRun
from .synthesis_types import SynthesisCancelled, SynthesisError, SynthesisRequest, SynthesisResult
from .text_input import readable_languages, segments_for, speaking_language, validate_text
from .timestamps import (
    AlignmentTimeline,
    SegmentContext,
    SegmentTiming,
    iter_segment_timed,
    synthesize_segment_timed,
)
from .voices import active_model_version, voice_and_active_version

__all__ = [
    "SynthesisError",
    "SynthesisRequest",
    "SynthesisResult",
    "SynthesisRun",
    "ensure_engine",
    "noise_variation",
    "resolve_model_version",
    "segment_params",
    "synthesis_create",
    "synthesis_iter_bytes",
    "synthesis_prepare",
    "synthesize_segment",
]

logger = logging.getLogger(__name__)

# Model ids of other vendors' SDK defaults; accepted and served by the voice's own model.
FOREIGN_MODEL_PREFIXES = ("eleven_", "tts-1", "gpt-4o", "gpt-")


def _resolve_model(req: SynthesisRequest, voice: Voice, version: ModelVersion | None) -> ModelVersion:
    """The version that serves ``req``: ``version``, the active one of the voice's model, if ``req`` allows."""
    model_id = (req.model_id or "").strip()
    if model_id and model_id != voice.model_id and not model_id.startswith(FOREIGN_MODEL_PREFIXES):
        known = ModelVersion.objects.filter(model_id=model_id).exists()
        if not known:
            models = sorted(set(ModelVersion.objects.filter(status="active").values_list("model_id", flat=True)))
            raise SynthesisError(
                f"{req.model_field}: unknown model '{model_id}'. Available models: {', '.join(models) or 'none'}.",
                code="model_not_found",
                status=400,
                field=req.model_field,
            )
        raise SynthesisError(
            f"Voice '{voice.voice_id}' is served by model '{voice.model_id}', not '{model_id}'.",
            code="model_voice_mismatch",
            status=400,
            field=req.model_field,
        )
    if version is None:
        raise SynthesisError(
            f"The model '{voice.model_id}' behind voice '{voice.voice_id}' has no active version.",
            code="model_unavailable",
            status=503,
            retry_after=30,
        )
    return version


def resolve_model_version(req: SynthesisRequest, voice: Voice) -> ModelVersion:
    """The active model version that serves ``voice`` for ``req``; ``SynthesisError`` if none fits."""
    return _resolve_model(req, voice, active_model_version(voice.model_id))


def synthesis_prepare(req: SynthesisRequest, *, whole: bool = False) -> SynthesisRun:
    """Validate, resolve, admit, reserve quota and open a pending history record: the run.

    ``whole``: the caller wants the whole file at once (``synthesis_create``), not
    a stream. A cache hit then needs nothing more: it is recorded in its final
    state right here, in the same transaction as its quota, and holds no
    concurrency place (it is answered before any other request could wait on it).
    Nothing is held when this raises.
    """
    started = time.monotonic()
    refuse_if_draining()
    text = validate_text(req.text, tenant=req.tenant, field=req.text_field)
    voice, active = voice_and_active_version(req.tenant, req.voice_id)
    if voice is None:
        raise SynthesisError(
            f"A voice with voice_id '{req.voice_id}' was not found.",
            code="voice_not_found",
            status=404,
            field=req.voice_field,
        )
    model_version = _resolve_model(req, voice, active)
    language = speaking_language(text, readable_languages(voice, model_version), req.language)
    # Which dictionaries apply is a lookup; applying them is work, and comes after admission.
    dictionaries = dictionaries_for(req.tenant, req.pronunciation_dictionary_locators)
    admission = _admit_request(req, hold_slot=dictionaries is not None)
    try:
        spoken = dictionaries.apply(text, field=req.text_field) if dictionaries is not None else text
        segments = segments_for(spoken, language=language, normalization=req.normalization, field=req.text_field)
        context = stitching_context(req)
        _check_audio_estimate(req, segments, context_chars=context_characters(context))
        cache_key, cached = _admit(
            req,
            admission,
            voice,
            model_version,
            segments,
            whole=whole,
            context=context,
            dictionaries=dictionaries.versions if dictionaries is not None else None,
        )
    except BaseException:
        admission.release()
        raise
    record = SynthesisRecord(
        tenant=req.tenant,
        api_key=req.api_key,
        voice_id=voice.voice_id,
        voice_name=voice.name,
        model_version=model_version,
        model_id=model_version.model_id,
        text=text if req.enable_logging else "",
        text_logged=req.enable_logging,
        characters=billed_characters(text, spoken),
        output_format=req.output_format.name,
        content_type=req.output_format.content_type,
        sample_rate=req.output_format.sample_rate,
        source=req.source,
        request_id=req.request_id,
        settings=req.settings
        if dictionaries is None
        else {**req.settings, "pronunciation_dictionary_locators": dictionaries.as_json()},
        cache_hit=cached is not None,
        heartbeat_at=timezone.now(),
    )
    run = SynthesisRun(
        request=req,
        voice=voice,
        model_version=model_version,
        spec=spec_for(model_version),
        segments=segments,
        characters=billed_characters(text, spoken),
        reservation=Reservation.nothing(req.tenant.pk),  # until the transaction below
        record=record,
        started=started,
        admission=admission,
        cache_key=cache_key,
        cached=cached,
        answered=whole and cached is not None,
        whole=whole,
        context=context,
        spoken_text=spoken if spoken != text else None,
        dictionaries=dictionaries,
    )
    try:
        if run.answered and cached is not None:
            _answer_from_cache(run, cached)
        # One transaction, one commit: the record and the characters it spends.
        with transaction.atomic():
            insert(record)  # record.save(force_insert=True), its INSERT built once (infra/lean_insert.py)
            record_dictionary_uses(record, dictionaries)
            run.reservation = reserve_characters(tenant=req.tenant, characters=run.characters)
    except QuotaExceeded as exc:
        admission.release()
        discard_record_audio(record)
        raise SynthesisError.from_quota(exc) from exc
    except BaseException:
        admission.release()
        discard_record_audio(record)
        raise
    # From here on the run owns everything: only its finish gives anything back.
    if run.answered:
        run.finish(SynthesisRecord.Status.SUCCESS, written=True)
    else:
        heartbeats.add(run)  # so that a crash of this process is noticed and its record reaped
    return run


def _audio_estimate(speed: float, segments: list[Segment]) -> float:
    """A low estimate of the seconds of audio ``segments`` make (speech at a brisk pace, every pause)."""
    per_char = settings.TTS_AUDIO_SECONDS_PER_CHAR_MIN
    silence = settings.TTS_SENTENCE_SILENCE_MS
    return sum(
        len(seg.text) * per_char / effective_speed(speed, seg) + (seg.pause_after_ms + silence) / 1000
        for seg in segments
    )


def _check_audio_estimate(req: SynthesisRequest, segments: list[Segment], *, context_chars: int = 0) -> None:
    """Refuse up front a request sure to make more audio than one request may (the pipeline
    also stops one that turns out longer than predicted, refunding what was not spoken).

    ``context_chars``: stitching context synthesized beside the text (and cut away) is engine
    work too, and counts at the caller's speed."""
    limit = audio_seconds_limit(req.tenant.plan)
    estimate = _audio_estimate(req.speed, segments)
    if context_chars:
        estimate += context_chars * settings.TTS_AUDIO_SECONDS_PER_CHAR_MIN / max(0.05, req.speed)
    if estimate > limit:
        raise _audio_limit_error(req, limit, f"would make at least {estimate:.0f} s of audio")


def _audio_limit_error(req: SynthesisRequest, limit: float, what: str) -> SynthesisError:
    return SynthesisError(
        f"'{req.text_field}' {what}; the limit per request is {limit:.0f} s (slow speech, long breaks and "
        "numbers spoken in full all add up).",
        code="audio_limit_exceeded",
        status=413,
        field=req.text_field,
    )


def _answer_from_cache(run: SynthesisRun, cached: CachedAudio) -> None:
    """Fill in the final state of a whole-file hit's record (and its audio file) before it is written."""
    _serve_from_cache(run, cached)
    run.done_segments = len(run.segments)
    run.audio_seconds = cached.duration_s
    run.mark_first_byte()
    run.final_fields(SynthesisRecord.Status.SUCCESS)
    _store_cached_audio(run, cached)


def _serve_from_cache(run: SynthesisRun, cached: CachedAudio) -> None:
    """What a hit answers with: the entry's format and duration, and its timings when asked for."""
    run.encoder = CachedAudioEncoder(cached.output_format, cached.duration_s)
    if run.request.timestamps:
        stored = alignment_cache.get(run.cache_key)
        run.timeline = AlignmentTimeline.from_json(stored) if stored else None
    run.record.sample_rate = cached.output_format.sample_rate


def _store_cached_audio(run: SynthesisRun, cached: CachedAudio) -> bool:
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


def _admit_request(req: SynthesisRequest, *, hold_slot: bool) -> SynthesisAdmission:
    """The rate limits, before any text work; with ``hold_slot`` (a request with dictionaries to
    apply) the tenant's concurrency place too, before that work."""
    try:
        admission = synthesis_admit(tenant=req.tenant, api_key=req.api_key, source=req.source)
        if hold_slot:
            admission.hold_slot(tenant=req.tenant)
    except LimitExceeded as exc:
        raise SynthesisError.from_limit(exc) from exc
    return admission


def _admit(
    req: SynthesisRequest,
    admission: SynthesisAdmission,
    voice: Voice,
    model_version: ModelVersion,
    segments: list[Segment],
    *,
    whole: bool,
    context: SegmentContext | None = None,
    dictionaries: list[tuple[str, str]] | None = None,
) -> tuple[str | None, CachedAudio | None]:
    """The cache lookup, a concurrency slot (not for a whole-file hit), an engine place on a miss."""
    try:
        sides = (context.before, context.after) if context is not None else None
        cache_key = audio_cache_key(
            req,
            voice=voice,
            model_version=model_version,
            segments=segments,
            context=sides,
            dictionaries=dictionaries,
        )
        cached = audio_cache.get(cache_key)
        if cached is None or not whole:
            admission.hold_slot(tenant=req.tenant)
        if cached is None:
            admission.admit_engine()
    except LimitExceeded as exc:
        raise SynthesisError.from_limit(exc) from exc
    return cache_key, cached


def ensure_engine(run: SynthesisRun) -> None:
    """Load the engine before any response is started, so that an engine that
    cannot load is a 503 the client can read, not a stream that breaks off."""
    if run.cached is not None and run.segment_source is None:
        return  # a cache hit needs no engine
    try:
        get_registry().get(run.spec)
    except EngineError as exc:
        run.fail("engine_unavailable")
        raise _engine_unavailable() from exc


def _engine_unavailable() -> SynthesisError:
    return SynthesisError(
        "The speech engine is not available right now.", code="engine_unavailable", status=503, retry_after=10
    )


def effective_speed(speed: float, segment: Segment) -> float:
    """The caller's speed times the segment's own (SSML) rate, within ``TTS_MIN_SPEED``..``TTS_MAX_SPEED``.

    The floor bounds the work one billed character can cause: below it, speech is
    slowed no further (OpenAI's 0.25 times SSML's 25 % would otherwise be 16x).
    """
    return min(settings.TTS_MAX_SPEED, max(settings.TTS_MIN_SPEED, speed * segment.rate))


def noise_variation(voice_settings: dict[str, Any]) -> float:
    """``voice_settings.stability`` (0..1) as a factor on the VITS noise scales.

    0.5 (ElevenLabs' default) and no stability keep the voice's own scales.
    Above 0.5 they shrink linearly to none at 1.0 (every take alike: the
    model's mean reading); below 0.5 they grow linearly to 1.5 times at 0.0.
    """
    stability = voice_settings.get("stability")
    if stability is None:
        return 1.0
    s = min(1.0, max(0.0, float(stability)))
    return 2.0 * (1.0 - s) if s >= 0.5 else 1.0 + (0.5 - s)


def segment_params(
    engine: Engine,
    segment: Segment,
    *,
    speaker_index: int,
    speed: float,
    seed: int | None = None,
    index: int = 0,
    variation: float = 1.0,
    style_blend: tuple[tuple[int, float], ...] = (),
) -> SynthesisParams:
    """Engine knobs for one segment: the caller's speed times the segment's own rate (and a
    blended voice's style mix).

    A request's ``seed`` gives segment ``index`` its own seed, so each segment's
    noise is reproducible and independent of how the others were scheduled.
    """
    speed = effective_speed(speed, segment)
    base = float(getattr(engine, "default_length_scale", 1.0))
    return SynthesisParams(
        speaker_id=speaker_index,
        length_scale=base / speed,
        seed=None if seed is None else derive_seed(seed, "segment", index),
        variation=variation,
        style_blend=style_blend,
    )


def _context_for(run: SynthesisRun, index: int) -> SegmentContext | None:
    """The stitching context of segment ``index``: before the first, after the last (known text only)."""
    ctx = run.context
    if ctx is None or run.segment_source is not None:
        return None
    before = ctx.before if index == 0 else None
    after = ctx.after if index == len(run.segments) - 1 else None
    return None if before is None and after is None else SegmentContext(before, after)


def _params_for(run: SynthesisRun, engine: Engine, segment: Segment, index: int) -> SynthesisParams:
    req = run.request
    return segment_params(
        engine,
        segment,
        speaker_index=run.voice.speaker_index,
        speed=req.speed,
        seed=req.seed,
        index=index,
        variation=noise_variation(req.settings),
        style_blend=run.voice.style_blend,
    )


def synthesize_segment(engine: Engine, segment: Segment, params: SynthesisParams) -> np.ndarray:
    """Float PCM for one segment at the engine's rate, trailing pause included."""
    return synthesize_segment_timed(engine, segment, params, silence_ms=settings.TTS_SENTENCE_SILENCE_MS)[0]


def _synthesize_ahead(
    run: SynthesisRun, engine: Engine, ahead: int | Callable[[], int], silence_ms: int
) -> Iterator[tuple[int, Segment, Future[tuple[np.ndarray, SegmentTiming]] | None]]:
    """Segments in order (with their index), each with its synthesis already queued, ``ahead`` at a time.

    ``ahead`` may be a callable, asked before each segment is queued: a stream
    comfortably ahead of its listener synthesizes its next segments whole and
    side by side as a whole-file request does, one still close to playback
    takes them one at a time (``None`` in the tuple: the caller decodes it in windows).

    Queued on the fair scheduler under the tenant, so that a tenant running many
    streams takes its turn with the others. With ``ahead`` 1 nothing is queued
    here (the caller synthesizes, in the tenant's turn too, e.g. in windows).
    Closing the iterator cancels what has not started, and so does the run's
    ``stop`` signal the moment the client goes away (before the stream's thread
    gets back here): a gone client never starts the engine on segments it will
    not receive.
    """
    source = enumerate(run.segments if run.segment_source is None else run.segment_source)
    how_many = ahead if callable(ahead) else lambda: ahead
    pending: deque[tuple[int, Segment, Future[tuple[np.ndarray, SegmentTiming]]]] = deque()
    try:
        while True:
            if not pending and how_many() <= 1:
                upcoming = next(source, None)
                if upcoming is None:
                    return
                yield upcoming[0], upcoming[1], None
                continue
            while len(pending) < how_many() and (upcoming := next(source, None)) is not None:
                index, segment = upcoming
                params = _params_for(run, engine, segment, index)
                future = engine_scheduler.submit(
                    run.request.tenant.pk,
                    synthesize_segment_timed,
                    engine,
                    segment,
                    params,
                    cancel=run.stop,
                    silence_ms=silence_ms,
                    context=_context_for(run, index),
                )
                pending.append((index, segment, future))
            if not pending:
                return
            yield pending.popleft()
    finally:
        for _, _, future in pending:
            future.cancel()


def synthesis_iter_bytes(run: SynthesisRun) -> Iterator[bytes]:
    """Encoded audio, one piece per segment as soon as it is ready.

    Closing the generator early (a client that went away) stops before the
    next segment is synthesized and the run ends cancelled; an engine failure
    ends it failed. Either way the run refunds what was never synthesized.
    """
    if run.cached is not None and run.segment_source is None:
        yield from _iter_cached(run, run.cached)
        return
    if run.cached is not None:  # a live stream: its text is still arriving, the entry cannot answer it
        run.cached = None
        run.record.cache_hit = False
        SynthesisRecord.objects.filter(pk=run.record.pk).update(cache_hit=False)
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
            raise _engine_unavailable() from exc
        req = run.request
        live = run.segment_source is not None
        # Live streams are not cached (their text was not known up front).
        cache = bool(run.cache_key and req.enable_logging and not live)
        # One copy of what is sent, for those who need it at the end: the history file, the caller
        # of a whole file, the cache (only while it is small enough to be an entry).
        store = req.enable_logging and settings.TTS_STORE_AUDIO
        limit = None if store or run.whole else settings.TTS_AUDIO_CACHE_MAX_ENTRY_BYTES
        run.sink = AudioSink(keep=store or run.whole or cache, limit=limit)
        encoder = run.encoder = make_encoder(req.output_format, engine.sample_rate)
        run.record.sample_rate = encoder.format.sample_rate
        # A live stream's pieces each have their own offsets: its alignment follows the spoken text.
        timeline = (
            AlignmentTimeline(None)
            if live
            else AlignmentTimeline.for_segments(run.spoken_text or req.text, run.segments)
        )
        run.timeline = timeline
        yield from _encoded_segments(run, engine, timeline, live=live)
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


def _encoded_segments(run: SynthesisRun, engine: Engine, timeline: AlignmentTimeline, *, live: bool) -> Iterator[bytes]:
    """The encoded bytes of every segment in order, then the encoder's tail; counts what went out."""
    encoder = run.encoder
    sink = run.sink
    assert encoder is not None and sink is not None
    # Engines that decode a sentence in windows stream inside it (HTTP, SSE and
    # WebSocket alike), every sentence: short engine tasks let another tenant's
    # work in between (decoding later sentences whole, ahead, was measured: no
    # gain in throughput on a quiet machine, and a longer wait for the other
    # tenant; docs/benchmarks.md). A whole-file request takes the engine's
    # cheapest whole-sentence path instead, and so does a stream once it is
    # comfortably ahead of its listener (``run.pace``, below: #28).
    windowed = not run.whole and _decodes_in_windows(engine)
    silence = settings.TTS_SENTENCE_SILENCE_MS
    # Known text on an engine that runs several syntheses at once: the next
    # segment is synthesized while this one is sent (at most that many ahead).
    workers = max(1, int(getattr(engine, "concurrency", 1)))
    ahead: int | Callable[[], int] = 1 if windowed or live else workers
    if windowed and not live and run.pace is not None:
        # A stream comfortably ahead of its listener: its next segments whole, side by side, as a
        # whole-file request makes them; close to playback (or late), in windows, one at a time.
        pace = run.pace
        ahead = lambda: workers if is_ahead(pace) else 1  # noqa: E731
    limit = audio_seconds_limit(run.request.tenant.plan)
    for index, segment, done in _synthesize_ahead(run, engine, ahead, silence):
        stop_if_aborted()
        if run.stop.is_set():
            raise WorkCancelled("the stream's client went away")
        segment_start = run.audio_seconds
        pieces: Iterator[np.ndarray]
        tenant = run.request.tenant.pk
        if windowed and done is None:
            timing = SegmentTiming()
            params = _params_for(run, engine, segment, index)
            # On the timeline as soon as the segment's timing is whole: before its
            # first window when the engine gives durations, else at its end.
            ready = functools.partial(timeline.add, segment, timing, offset=segment_start)
            windows = iter_segment_timed(
                engine,
                segment,
                params,
                silence_ms=silence,
                timing=timing,
                ready=ready,
                context=_context_for(run, index),
                pace=run.pace,
            )
            pieces = engine_scheduler.iterate(tenant, windows, inline=queues_fairly(engine), cancel=run.stop)
        else:
            if done is not None:
                pcm, timing = done.result()
            else:
                params = _params_for(run, engine, segment, index)
                pcm, timing = engine_scheduler.run(
                    tenant,
                    synthesize_segment_timed,
                    engine,
                    segment,
                    params,
                    cancel=run.stop,
                    silence_ms=silence,
                    context=_context_for(run, index),
                )
            pieces = iter([pcm])
            # Known before the audio goes out: a live stream sends it with the chunk.
            timeline.add(segment, timing, offset=segment_start)
        counted = False
        for pcm in pieces:
            run.audio_seconds += len(pcm) / engine.sample_rate
            if run.pace is not None:
                run.pace.produced(len(pcm) / engine.sample_rate)
            if run.audio_seconds > limit:
                # Longer than predicted: stop here; the run refunds what was not spoken.
                raise _audio_limit_error(run.request, limit, f"made more than {limit:.0f} s of audio")
            data = encoder.feed(pcm)
            if data:
                if not counted:  # a segment is spent once any of its audio goes out
                    run.done_segments += 1
                    counted = True
                run.mark_first_byte()
                sink.write(data)
                if run.pace is not None:
                    run.pace.item()
                yield data
        if not counted:
            run.done_segments += 1
    tail = encoder.finish()
    timeline.finish(run.audio_seconds)
    if tail:
        run.mark_first_byte()
        sink.write(tail)
        if run.pace is not None:
            run.pace.item()
        yield tail


def _decodes_in_windows(engine: Engine) -> bool:
    """Whether ``engine`` gives a sentence's audio in pieces (``iter_synthesize_ids`` on a windowed model)."""
    return hasattr(engine, "iter_synthesize_ids") and bool(getattr(engine, "windowed", True))


def _iter_cached(run: SynthesisRun, cached: CachedAudio) -> Iterator[bytes]:
    """A cache hit, sent like a stream: no engine; characters and history as for a synthesis."""
    _serve_from_cache(run, cached)
    success = False
    try:
        for piece in cached.pieces():
            run.mark_first_byte()
            yield piece
        run.done_segments = len(run.segments)
        run.audio_seconds = cached.duration_s
        success = True
    finally:
        if success:
            run.succeed(audio_saved=_store_cached_audio(run, cached))
        else:
            run.done_segments = 0  # a hit cut short: nothing of it is billed
            run.cancel()


def synthesis_create(req: SynthesisRequest) -> SynthesisResult:
    """Synthesize a whole request and return its bytes (the non-streaming path)."""
    run = synthesis_prepare(req, whole=True)
    if run.answered and run.cached is not None:
        alignment = run.timeline.as_json() if run.timeline is not None else None
        return SynthesisResult(run.cached.audio, run.record, run.cached.output_format, alignment)
    gen = cast(Generator[bytes, None, None], synthesis_iter_bytes(run))
    try:
        for _ in gen:
            pass  # the run's sink keeps the one copy
    except BaseException:
        # Nothing was delivered: the run (whole) refunds every character.
        gen.close()
        run.cancel()
        raise
    audio = run.seal_audio() or b""  # exact lengths in wav/flac headers
    fmt = run.encoder.format if run.encoder is not None else req.output_format
    alignment = run.timeline.as_json() if run.timeline is not None else None
    return SynthesisResult(audio=audio, record=run.record, output_format=fmt, alignment=alignment)
