"""Stage 7 of the pipeline, the engine: each segment's knobs, its synthesis on the fair scheduler
(ahead of the listener where the engine runs several at once, in windows where it decodes so),
and the encoded bytes counted as they go out.
"""

from __future__ import annotations

import functools
import logging
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future

import numpy as np
from django.conf import settings

from accounts.quota import audio_seconds_limit
from tts.catalogue import get_registry
from tts.errors import SynthesisError
from tts.inference.engine import Engine, EngineError, SynthesisParams, derive_seed
from tts.inference.pacing import is_ahead
from tts.inference.work_pool import WorkCancelled
from tts.synthesis.alignment.timeline import AlignmentTimeline
from tts.synthesis.alignment.timestamps import (
    SegmentContext,
    SegmentTiming,
    iter_segment_timed,
    synthesize_segment_timed,
)
from tts.synthesis.engine_time.budget import EngineBudget
from tts.synthesis.engine_time.fairness import segment_engine_seconds
from tts.synthesis.engine_time.scheduler import engine_scheduler, queues_fairly
from tts.synthesis.runs.run import SynthesisRun
from tts.synthesis.runs.shutdown import stop_if_aborted
from tts.synthesis.stages.estimate import audio_limit_error, effective_speed
from tts.text.segment import Segment

logger = logging.getLogger(__name__)


def ensure_engine(run: SynthesisRun) -> None:
    """Load the engine before any response is started, so that an engine that
    cannot load is a 503 the client can read, not a stream that breaks off."""
    if run.cached is not None and run.segment_source is None:
        return  # a cache hit needs no engine
    try:
        get_registry().get(run.spec)
    except EngineError as exc:
        run.fail("engine_unavailable")
        raise engine_unavailable() from exc


def engine_unavailable() -> SynthesisError:
    return SynthesisError(
        "The speech engine is not available right now.", code="engine_unavailable", status=503, retry_after=10
    )


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


def context_for(run: SynthesisRun, index: int) -> SegmentContext | None:
    """The stitching context of segment ``index``: before the first, after the last (known text only)."""
    ctx = run.context
    if ctx is None or run.segment_source is not None:
        return None
    before = ctx.before if index == 0 else None
    after = ctx.after if index == len(run.segments) - 1 else None
    return None if before is None and after is None else SegmentContext(before, after)


def params_for(run: SynthesisRun, engine: Engine, segment: Segment, index: int) -> SynthesisParams:
    """Segment ``index``'s knobs, in the voice that speaks it (a dialogue turn's own: ``voice_for``)."""
    req = run.request
    voice = run.voice_for(segment)
    return segment_params(
        engine,
        segment,
        speaker_index=voice.speaker_index,
        speed=req.speed,
        seed=req.seed,
        index=index,
        variation=req.noise_variation,
        style_blend=voice.style_blend,
    )


def silence_after(segment: Segment, silence_ms: int) -> int:
    """The sentence silence after ``segment``: none after a first clause (``Segment.continued``),
    whose own ``pause_after_ms`` is a clause's pause."""
    return 0 if segment.continued else silence_ms


def synthesize_segment(engine: Engine, segment: Segment, params: SynthesisParams) -> np.ndarray:
    """Float PCM for one segment at the engine's rate, trailing pause included."""
    return synthesize_segment_timed(engine, segment, params, silence_ms=settings.TTS_SENTENCE_SILENCE_MS)[0]


def speak_segment(run: SynthesisRun, engine: Engine, segment: Segment, index: int, budget: EngineBudget) -> np.ndarray:
    """Stage 7 for one segment of a job's chunk: its knobs as a request's segment ``index`` gets
    them (``params_for``: speed, speaker, blend, its own seed), made on the fair scheduler in the
    tenant's turn, and charged to the job's engine-time ``budget`` (``SynthesisError`` 413 past it).
    Float PCM at the engine's rate, trailing pause included."""
    req = run.request
    pcm = engine_scheduler.run(
        req.tenant.pk,
        synthesize_segment,
        engine,
        segment,
        params_for(run, engine, segment, index),
        engine_seconds=segment_engine_seconds(engine, segment, req.speed),
    )
    made = len(pcm) / engine.sample_rate
    pause = (segment.pause_after_ms + req.silence_ms) / 1000  # silence, not engine work
    budget.charge(made, slack=pause)
    budget.credit(min(pause, made))
    return pcm


def synthesize_ahead(
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
            # Nothing is queued beside a first clause (``Segment.continued``) still being made: on a
            # machine whose cores share their units the rest would slow it, and it is the first audio.
            while (
                len(pending) < how_many()
                and not (pending and pending[-1][1].continued and not pending[-1][2].done())
                and (upcoming := next(source, None)) is not None
            ):
                index, segment = upcoming
                params = params_for(run, engine, segment, index)
                future = engine_scheduler.submit(
                    run.request.tenant.pk,
                    synthesize_segment_timed,
                    engine,
                    segment,
                    params,
                    cancel=run.stop,
                    engine_seconds=segment_engine_seconds(engine, segment, run.request.speed),
                    silence_ms=silence_after(segment, silence_ms),
                    context=context_for(run, index),
                )
                pending.append((index, segment, future))
            if not pending:
                return
            yield pending.popleft()
    finally:
        for _, _, future in pending:
            future.cancel()


def encoded_segments(run: SynthesisRun, engine: Engine, timeline: AlignmentTimeline, *, live: bool) -> Iterator[bytes]:
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
    windowed = not run.whole and decodes_in_windows(engine)
    silence = run.request.silence_ms
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
    budget = run.engine_budget
    for index, segment, done in synthesize_ahead(run, engine, ahead, silence):
        stop_if_aborted()
        if run.stop.is_set():
            raise WorkCancelled("the stream's client went away")
        segment_start = run.audio_seconds
        pieces: Iterator[np.ndarray]
        tenant = run.request.tenant.pk
        if windowed and done is None:
            timing = SegmentTiming()
            params = params_for(run, engine, segment, index)
            # On the timeline as soon as the segment's timing is whole: before its
            # first window when the engine gives durations, else at its end.
            ready = functools.partial(timeline.add, segment, timing, offset=segment_start)
            windows = iter_segment_timed(
                engine,
                segment,
                params,
                silence_ms=silence_after(segment, silence),
                timing=timing,
                ready=ready,
                context=context_for(run, index),
                pace=run.pace,
            )
            pieces = engine_scheduler.iterate(tenant, windows, inline=queues_fairly(engine), cancel=run.stop)
        else:
            if done is not None:
                pcm, timing = done.result()
            else:
                params = params_for(run, engine, segment, index)
                pcm, timing = engine_scheduler.run(
                    tenant,
                    synthesize_segment_timed,
                    engine,
                    segment,
                    params,
                    cancel=run.stop,
                    engine_seconds=segment_engine_seconds(engine, segment, run.request.speed),
                    silence_ms=silence_after(segment, silence),
                    context=context_for(run, index),
                )
            pieces = iter([pcm])
            # Known before the audio goes out: a live stream sends it with the chunk.
            timeline.add(segment, timing, offset=segment_start)
        counted = False
        pause = (segment.pause_after_ms + silence_after(segment, silence)) / 1000  # silence, not engine work
        for pcm in pieces:
            run.made(len(pcm) / engine.sample_rate)
            if budget is not None:  # engine time, charged as it is spent (tts/synthesis/engine_time/budget.py)
                budget.charge(len(pcm) / engine.sample_rate, slack=pause)
            if run.pace is not None:
                run.pace.produced(len(pcm) / engine.sample_rate)
            if run.audio_seconds > limit:
                # Longer than predicted: stop here; the run refunds what was not spoken.
                raise audio_limit_error(run.request, limit, f"made more than {limit:.0f} s of audio")
            data = encoder.feed(pcm)
            if data:
                if not counted:  # a segment is spent once any of its audio goes out
                    run.segment_spoken()
                    counted = True
                run.mark_first_byte()
                sink.write(data)
                if run.pace is not None:
                    run.pace.item()
                yield data
        if not counted:
            run.segment_spoken()
        if budget is not None:
            budget.credit(min(pause, run.audio_seconds - segment_start))
    tail = encoder.finish()
    timeline.finish(run.audio_seconds)
    if tail:
        run.mark_first_byte()
        sink.write(tail)
        if run.pace is not None:
            run.pace.item()
        yield tail


def decodes_in_windows(engine: Engine) -> bool:
    """Whether ``engine`` gives a sentence's audio in pieces (``iter_synthesize_ids`` on a windowed model)."""
    return hasattr(engine, "iter_synthesize_ids") and bool(getattr(engine, "windowed", True))
