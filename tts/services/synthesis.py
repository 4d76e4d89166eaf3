"""The one synthesis pipeline every entry point uses (REST, streaming, WebSocket,
OpenAI, jobs, the playground). No HTTP here.

1. validate and resolve: voice visible to this tenant, model, limits;
2. text: SSML or plain -> normalize -> segments -> cost in characters;
3. quota: reserve characters atomically; refund on failure or cancel;
4. inference: segment by segment through the registry, first sentence first;
5. audio: resample and encode incrementally, yield bytes;
6. record: the history row (+ audio file) and its status, whatever happens.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction

from accounts.models import ApiKey, Tenant
from accounts.quota import QuotaExceeded, Reservation, next_period_start, refund_characters, reserve_characters
from accounts.ratelimit import LimitExceeded
from tts.audio.encode import StreamEncoder, make_encoder
from tts.audio.formats import OutputFormat
from tts.inference.engine import Engine, EngineError, ModelSpec, SynthesisParams
from tts.models import ModelVersion, SynthesisRecord, Voice
from tts.text.language import check_language
from tts.text.prepare import TextError, prepare_text
from tts.text.segment import Segment
from ttsplatform import metrics

from .admission import SynthesisAdmission, synthesis_admit
from .alignment_cache import alignment_cache
from .cache import CachedAudio, CachedAudioEncoder, audio_cache, audio_cache_key
from .engines import get_registry, spec_for
from .history import (
    AudioSink,
    discard_record_audio,
    finish_fields,
    record_finish,
    storage_links_files,
    store_record_audio,
)
from .timestamps import AlignmentTimeline, SegmentTiming, iter_segment_timed, synthesize_segment_timed
from .voices import active_model_version, voice_and_active_version

logger = logging.getLogger(__name__)

# Model ids of other vendors' SDK defaults; accepted and served by the voice's own model.
FOREIGN_MODEL_PREFIXES = ("eleven_", "tts-1", "gpt-4o", "gpt-")


class SynthesisError(Exception):
    """A request the pipeline refuses or could not complete.

    Carries what both API dialects need: HTTP ``status``, a short ``code``, the
    request ``field`` at fault (if any) and ``retry_after`` seconds for 429/503.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: int,
        field: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.field = field
        self.retry_after = retry_after


@dataclass
class SynthesisRequest:
    tenant: Tenant
    voice_id: str
    text: str
    output_format: OutputFormat
    source: str
    api_key: ApiKey | None = None
    model_id: str | None = None
    speed: float = 1.0
    language: str | None = None
    enable_logging: bool = True
    normalization: str = "auto"
    request_id: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    text_field: str = "text"
    voice_field: str = "voice_id"
    model_field: str = "model_id"
    #: The caller asked for character timestamps: the history item keeps them (captions).
    timestamps: bool = False


@dataclass
class PreparedSynthesis:
    request: SynthesisRequest
    voice: Voice
    model_version: ModelVersion
    spec: ModelSpec
    segments: list[Segment]
    characters: int
    reservation: Reservation
    record: SynthesisRecord
    started: float
    first_byte_at: float | None = None
    audio_seconds: float = 0.0
    done_segments: int = 0
    encoder: StreamEncoder | None = None
    #: Where synthesis_iter_bytes takes its segments from, if not ``segments``:
    #: a live stream (WebSocket) hands them out as text arrives, appending each
    #: to ``segments`` first so the refund of unspent characters stays right.
    segment_source: Iterable[Segment] | None = None
    #: Rate-limit, concurrency and engine places this synthesis holds (released when it ends).
    admission: SynthesisAdmission = field(default_factory=SynthesisAdmission)
    cache_key: str | None = None
    #: The cached audio that answers this request, when it was a cache hit.
    cached: CachedAudio | None = None
    #: Character timings of what was synthesized (or the cached entry's), for with-timestamps and history.
    timeline: AlignmentTimeline | None = None
    #: A whole-file cache hit: the record was written once, in its final state, with the
    #: quota; nothing is left to synthesize or record (``synthesis_create`` returns ``cached``).
    answered: bool = False


def _max_chars(tenant: Tenant) -> int:
    return min(settings.TTS_MAX_CHARS_PER_REQUEST, tenant.plan.max_characters_per_request)


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


def validate_text(req: SynthesisRequest) -> str:
    text = req.text
    if not isinstance(text, str) or not text.strip():
        raise SynthesisError(
            f"'{req.text_field}' must contain some text to speak.", code="empty_text", status=400, field=req.text_field
        )
    limit = _max_chars(req.tenant)
    if len(text) > limit:
        raise SynthesisError(
            f"'{req.text_field}' is {len(text)} characters long; the limit per request is {limit}.",
            code="max_character_limit_exceeded",
            status=413,
            field=req.text_field,
        )
    return text


def synthesis_prepare(req: SynthesisRequest, *, whole: bool = False) -> PreparedSynthesis:
    """Validate, resolve, reserve quota and open a pending history record.

    ``whole``: the caller wants the whole file at once (``synthesis_create``), not
    a stream. A cache hit then needs nothing more: it is recorded in its final
    state right here, in the same transaction as its quota, and holds no
    concurrency place (it is answered before any other request could wait on it).
    """
    started = time.monotonic()
    text = validate_text(req)
    voice, active = voice_and_active_version(req.tenant, req.voice_id)
    if voice is None:
        raise SynthesisError(
            f"A voice with voice_id '{req.voice_id}' was not found.",
            code="voice_not_found",
            status=404,
            field=req.voice_field,
        )
    model_version = _resolve_model(req, voice, active)
    try:
        language = check_language(text, [voice.language, *model_version.languages], req.language)
        segments = prepare_text(
            text,
            language=language,
            normalization=req.normalization,  # type: ignore[arg-type]
            max_segment_chars=settings.TTS_SEGMENT_MAX_CHARS,
        )
    except TextError as exc:
        field_name = req.text_field if exc.field == "text" else exc.field
        raise SynthesisError(str(exc), code=exc.code, status=exc.status, field=field_name) from exc
    if not any(seg.text.strip() for seg in segments):
        raise SynthesisError(
            f"'{req.text_field}' has nothing that can be spoken.", code="empty_text", status=400, field=req.text_field
        )
    characters = len(text)
    admission, cache_key, cached = _admit(req, voice, model_version, segments, whole=whole)
    record = SynthesisRecord(
        tenant=req.tenant,
        api_key=req.api_key,
        voice_id=voice.voice_id,
        voice_name=voice.name,
        model_version=model_version,
        model_id=model_version.model_id,
        text=text if req.enable_logging else "",
        text_logged=req.enable_logging,
        characters=characters,
        output_format=req.output_format.name,
        content_type=req.output_format.content_type,
        sample_rate=req.output_format.sample_rate,
        source=req.source,
        request_id=req.request_id,
        settings=req.settings,
        cache_hit=cached is not None,
    )
    prep = PreparedSynthesis(
        request=req,
        voice=voice,
        model_version=model_version,
        spec=spec_for(model_version),
        segments=segments,
        characters=characters,
        reservation=Reservation.nothing(req.tenant.pk),  # until the transaction below
        record=record,
        started=started,
        admission=admission,
        cache_key=cache_key,
        cached=cached,
        answered=whole and cached is not None,
    )
    try:
        if prep.answered and cached is not None:
            _answer_from_cache(prep, cached)
        # One transaction, one commit: the record and the characters it spends.
        with transaction.atomic():
            record.save(force_insert=True)
            prep.reservation = reserve_characters(tenant=req.tenant, characters=characters)
    except QuotaExceeded as exc:
        admission.release()
        discard_record_audio(record)
        retry = int(_next_reset_ts() - time.time())
        raise SynthesisError(str(exc), code="quota_exceeded", status=429, retry_after=max(1, retry)) from exc
    except BaseException:
        admission.release()
        discard_record_audio(record)
        raise
    if prep.answered:
        admission.release(completed=True)
        metrics.synthesis_finished(prep)
    return prep


def _answer_from_cache(prep: PreparedSynthesis, cached: CachedAudio) -> None:
    """Fill in the final state of a whole-file hit's record (and its audio file) before it is written."""
    _serve_from_cache(prep, cached)
    prep.done_segments = len(prep.segments)
    prep.audio_seconds = cached.duration_s
    prep.first_byte_at = time.monotonic()
    finish_fields(prep, prep.record, status=SynthesisRecord.Status.SUCCESS)
    _store_cached_audio(prep, cached)


def _serve_from_cache(prep: PreparedSynthesis, cached: CachedAudio) -> None:
    """What a hit answers with: the entry's format and duration, and its timings when asked for."""
    prep.encoder = CachedAudioEncoder(cached.output_format, cached.duration_s)
    if prep.request.timestamps:
        stored = alignment_cache.get(prep.cache_key)
        prep.timeline = AlignmentTimeline.from_json(stored) if stored else None
    prep.record.sample_rate = cached.output_format.sample_rate


def _store_cached_audio(prep: PreparedSynthesis, cached: CachedAudio) -> bool:
    """A hit's own history file: a link to the entry's file, else written. True if the record has one.

    When the entry's file is gone (its item was deleted) the bytes are written
    and the entry is pointed at this record's file, so later hits link again.
    Never raises: as for a synthesis, the answer and its record matter more
    than the stored copy.
    """
    if not (prep.request.enable_logging and settings.TTS_STORE_AUDIO):
        return False
    record = prep.record
    try:
        extension = cached.output_format.extension
        linked = store_record_audio(record, cached.audio, extension, share_from=cached.stored_name)
    except Exception:
        logger.exception("could not store the audio of history record %s", record.pk)
        record.audio.name = ""
        return False
    if not linked and storage_links_files(record.audio.storage):
        audio_cache.put(prep.cache_key, dataclasses.replace(cached, stored_name=record.audio.name or ""))
    return True


def _admit(
    req: SynthesisRequest, voice: Voice, model_version: ModelVersion, segments: list[Segment], *, whole: bool
) -> tuple[SynthesisAdmission, str | None, CachedAudio | None]:
    """Rate limits, the cache lookup, a concurrency slot (not for a whole-file hit), an engine place on a miss."""
    try:
        admission = synthesis_admit(tenant=req.tenant, api_key=req.api_key, source=req.source)
    except LimitExceeded as exc:
        raise SynthesisError(exc.message, code=exc.code, status=exc.status, retry_after=exc.retry_after) from exc
    try:
        cache_key = audio_cache_key(req, voice=voice, model_version=model_version, segments=segments)
        cached = audio_cache.get(cache_key)
        if cached is None or not whole:
            admission.hold_slot(tenant=req.tenant)
        if cached is None:
            admission.admit_engine()
    except LimitExceeded as exc:
        admission.release()
        raise SynthesisError(exc.message, code=exc.code, status=exc.status, retry_after=exc.retry_after) from exc
    except BaseException:
        admission.release()
        raise
    return admission, cache_key, cached


def _next_reset_ts() -> float:
    reset = next_period_start()
    return time.mktime(reset.timetuple())


def _params_for(prep: PreparedSynthesis, engine: Engine, segment: Segment) -> SynthesisParams:
    speed = max(0.05, prep.request.speed * segment.rate)
    base = float(getattr(engine, "default_length_scale", 1.0))
    return SynthesisParams(
        speaker_id=prep.voice.speaker_index, length_scale=base / speed, style_blend=prep.voice.style_blend
    )


def synthesize_segment(engine: Engine, segment: Segment, params: SynthesisParams) -> np.ndarray:
    """Float PCM for one segment at the engine's rate, trailing pause included."""
    return synthesize_segment_timed(engine, segment, params, silence_ms=settings.TTS_SENTENCE_SILENCE_MS)[0]


def _spent_characters(prep: PreparedSynthesis) -> int:
    """Characters of the segments synthesized so far (proportional to segment text)."""
    total = sum(len(s.text) for s in prep.segments) or 1
    done = sum(len(s.text) for s in prep.segments[: prep.done_segments])
    return min(prep.characters, round(prep.characters * done / total))


# Shared by every synthesis in the process; the engine's own slots bound how many run at once.
_segment_pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="tts-segment")


def _synthesize_ahead(
    prep: PreparedSynthesis, engine: Engine, ahead: int, silence_ms: int
) -> Iterator[tuple[Segment, Future[tuple[np.ndarray, SegmentTiming]] | None]]:
    """Segments in order, each with its synthesis already submitted, ``ahead`` at a time.

    With ``ahead`` 1 nothing is submitted (the caller synthesizes, e.g. in
    windows). Closing the iterator cancels what has not started, so a client
    that goes away never starts the engine on segments it will not receive.
    """
    source = iter(prep.segments if prep.segment_source is None else prep.segment_source)
    if ahead <= 1:
        for segment in source:
            yield segment, None
        return
    pending: deque[tuple[Segment, Future[tuple[np.ndarray, SegmentTiming]]]] = deque()
    try:
        while True:
            while len(pending) < ahead and (upcoming := next(source, None)) is not None:
                params = _params_for(prep, engine, upcoming)
                future = _segment_pool.submit(synthesize_segment_timed, engine, upcoming, params, silence_ms=silence_ms)
                pending.append((upcoming, future))
            if not pending:
                return
            yield pending.popleft()
    finally:
        for _, future in pending:
            future.cancel()


def synthesis_iter_bytes(prep: PreparedSynthesis) -> Iterator[bytes]:
    """Encoded audio, one piece per segment as soon as it is ready.

    Closing the generator early (a client that went away) stops before the
    next segment is synthesized, marks the record cancelled and refunds the
    characters of what was never synthesized. An engine failure marks it
    failed and refunds what was not synthesized.
    """
    req = prep.request
    if prep.cached is not None and prep.segment_source is None:
        yield from _iter_cached(prep, prep.cached)
        return
    if prep.cached is not None:  # a live stream: its text is still arriving, the entry cannot answer it
        prep.cached = None
        prep.record.cache_hit = False
        SynthesisRecord.objects.filter(pk=prep.record.pk).update(cache_hit=False)
    try:
        engine = get_registry().get(prep.spec)
    except EngineError as exc:
        _finish_failed(prep, "engine_unavailable")
        raise SynthesisError(
            "The speech engine is not available right now.", code="engine_unavailable", status=503, retry_after=10
        ) from exc
    fmt = req.output_format
    sink = AudioSink(store=req.enable_logging and settings.TTS_STORE_AUDIO)
    encoder = prep.encoder = make_encoder(fmt, engine.sample_rate)
    prep.record.sample_rate = encoder.format.sample_rate
    # A live stream's pieces each have their own offsets: its alignment follows the spoken text.
    live = prep.segment_source is not None
    timeline = AlignmentTimeline(None) if live else AlignmentTimeline.for_segments(req.text, prep.segments)
    prep.timeline = timeline
    status = SynthesisRecord.Status.CANCELLED
    error_code = ""
    # Everything sent, for the cache; live streams are not cached (their text was not known up front).
    sent: list[bytes] | None = [] if prep.cache_key and req.enable_logging and prep.segment_source is None else None
    try:
        # Engines that decode a sentence in windows stream inside it (HTTP only:
        # WebSocket messages carry one segment's audio with its alignment).
        windowed = not live and hasattr(engine, "iter_synthesize_ids")
        silence = settings.TTS_SENTENCE_SILENCE_MS
        # Known text on an engine that runs several syntheses at once: the next
        # segment is synthesized while this one is sent (at most that many ahead).
        ahead = 1 if windowed or live else max(1, int(getattr(engine, "concurrency", 1)))
        for segment, done in _synthesize_ahead(prep, engine, ahead, silence):
            segment_start = prep.audio_seconds
            pieces: Iterator[np.ndarray]
            if windowed:
                timing = SegmentTiming()
                params = _params_for(prep, engine, segment)
                pieces = iter_segment_timed(engine, segment, params, silence_ms=silence, timing=timing)
            else:
                if done is not None:
                    pcm, timing = done.result()
                else:
                    params = _params_for(prep, engine, segment)
                    pcm, timing = synthesize_segment_timed(engine, segment, params, silence_ms=silence)
                pieces = iter([pcm])
                # Known before the audio goes out: a live stream sends it with the chunk.
                timeline.add(segment, timing, offset=segment_start)
            counted = False
            for pcm in pieces:
                prep.audio_seconds += len(pcm) / engine.sample_rate
                data = encoder.feed(pcm)
                if data:
                    if not counted:  # a segment is spent once any of its audio goes out
                        prep.done_segments += 1
                        counted = True
                    if prep.first_byte_at is None:
                        prep.first_byte_at = time.monotonic()
                    sink.write(data)
                    if sent is not None:
                        sent.append(data)
                    yield data
            if windowed:
                timeline.add(segment, timing, offset=segment_start)
            if not counted:
                prep.done_segments += 1
        tail = encoder.finish()
        timeline.finish(prep.audio_seconds)
        if tail:
            if prep.first_byte_at is None:
                prep.first_byte_at = time.monotonic()
            sink.write(tail)
            if sent is not None:
                sent.append(tail)
            yield tail
        status = SynthesisRecord.Status.SUCCESS
    except EngineError as exc:
        status = SynthesisRecord.Status.FAILED
        error_code = "engine_error"
        logger.exception("synthesis %s failed in the engine", prep.record.pk)
        raise SynthesisError(
            "The speech engine failed while synthesizing this request.",
            code="engine_error",
            status=503 if exc.retryable else 500,
            retry_after=5 if exc.retryable else None,
        ) from exc
    except SynthesisError:
        status = SynthesisRecord.Status.FAILED
        error_code = "synthesis_error"
        raise
    except Exception:
        status = SynthesisRecord.Status.FAILED
        error_code = "internal_error"
        raise
    finally:
        encoder.close()
        prep.admission.release(completed=status == SynthesisRecord.Status.SUCCESS)
        if status == SynthesisRecord.Status.SUCCESS:
            record_finish(prep, status=status, sink=sink)
            if sent is not None:
                # After the record: the entry names its stored file, which hits link to.
                audio = encoder.seal(b"".join(sent))
                stored = prep.record.audio.name or ""
                audio_cache.put(prep.cache_key, CachedAudio(audio, encoder.format, prep.audio_seconds, stored))
                alignment_cache.put(prep.cache_key, timeline.as_json())
        else:
            refund_characters(prep.reservation, prep.characters - _spent_characters(prep))
            record_finish(prep, status=status, sink=None, error_code=error_code)
            sink.discard()


def _iter_cached(prep: PreparedSynthesis, cached: CachedAudio) -> Iterator[bytes]:
    """A cache hit, sent like a stream: no engine; characters and history as for a synthesis."""
    _serve_from_cache(prep, cached)
    status = SynthesisRecord.Status.CANCELLED
    try:
        for piece in cached.pieces():
            if prep.first_byte_at is None:
                prep.first_byte_at = time.monotonic()
            yield piece
        prep.done_segments = len(prep.segments)
        prep.audio_seconds = cached.duration_s
        status = SynthesisRecord.Status.SUCCESS
    finally:
        prep.admission.release()
        if status == SynthesisRecord.Status.SUCCESS:
            record_finish(prep, status=status, sink=None, audio_saved=_store_cached_audio(prep, cached))
        else:
            refund_characters(prep.reservation)
            record_finish(prep, status=status, sink=None)


def _finish_failed(prep: PreparedSynthesis, error_code: str) -> None:
    prep.admission.release()
    refund_characters(prep.reservation)
    record_finish(prep, status=SynthesisRecord.Status.FAILED, sink=None, error_code=error_code)


@dataclass
class SynthesisResult:
    audio: bytes
    record: SynthesisRecord
    output_format: OutputFormat
    #: ``{"alignment": ..., "normalized_alignment": ...}`` (``None`` on a cache hit whose timings were evicted).
    alignment: dict[str, Any] | None = None


def synthesis_create(req: SynthesisRequest) -> SynthesisResult:
    """Synthesize a whole request and return its bytes (the non-streaming path)."""
    prep = synthesis_prepare(req, whole=True)
    if prep.answered and prep.cached is not None:
        alignment = prep.timeline.as_json() if prep.timeline is not None else None
        return SynthesisResult(prep.cached.audio, prep.record, prep.cached.output_format, alignment)
    chunks: list[bytes] = []
    try:
        for chunk in synthesis_iter_bytes(prep):
            chunks.append(chunk)
    except BaseException:
        # Nothing was delivered: refund whatever the generator did not.
        refund_characters(prep.reservation)
        raise
    audio = b"".join(chunks)
    if prep.encoder is not None:
        audio = prep.encoder.seal(audio)  # exact lengths in wav/flac headers
    fmt = prep.encoder.format if prep.encoder is not None else req.output_format
    alignment = prep.timeline.as_json() if prep.timeline is not None else None
    return SynthesisResult(audio=audio, record=prep.record, output_format=fmt, alignment=alignment)


# --- pieces for callers that drive the segments themselves (long-form jobs) ---


def resolve_model_version(req: SynthesisRequest, voice: Voice) -> ModelVersion:
    """The active model version that serves ``voice`` for ``req``; ``SynthesisError`` if none fits."""
    return _resolve_model(req, voice, active_model_version(voice.model_id))


def segment_params(
    engine: Engine,
    segment: Segment,
    *,
    speaker_index: int,
    speed: float,
    style_blend: tuple[tuple[int, float], ...] = (),
) -> SynthesisParams:
    """Engine knobs for one segment: the caller's speed times the segment's own rate."""
    speed = max(0.05, speed * segment.rate)
    base = float(getattr(engine, "default_length_scale", 1.0))
    return SynthesisParams(speaker_id=speaker_index, length_scale=base / speed, style_blend=style_blend)
