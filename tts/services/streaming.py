"""Streaming synthesis: the one pipeline (``synthesis_iter_bytes``) read from asyncio.

Two pieces, both built on the pipeline's sync generator rather than beside it:

* :class:`ThreadedStream` runs a generator on one dedicated thread and hands
  its items to asyncio. The next item is started as soon as one is handed
  over and no sooner, so at most one segment is synthesized ahead of what the
  client has taken (backpressure towards the engine). ``close()`` never
  blocks: it cancels the prefetch if it has not started, then closes the
  generator on its own thread (cancelled record, refund of what was never
  synthesized) and closes that thread's database connections.
* :class:`LiveUtterance` is one WebSocket utterance: text arrives in pieces,
  each piece reserves its characters when it arrives, and its segments are
  fed to the same generator through ``PreparedSynthesis.segment_source``, so
  one utterance is one history record, one reservation and one continuous
  encoded stream.

Nothing here knows HTTP or WebSockets; ``tts.api.streaming`` and
``tts.consumers`` do.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import queue
import threading
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from django.conf import settings
from django.db import connections

from accounts.quota import QuotaExceeded, Reservation, refund_characters, reserve_characters
from tts.inference.engine import EngineError
from tts.models import SynthesisRecord
from tts.text.prepare import TextError, prepare_text
from tts.text.segment import Segment

from .engines import get_registry
from .history import record_finish
from .synthesis import PreparedSynthesis, SynthesisError, synthesis_iter_bytes, validate_text
from .timestamps import websocket_alignment

logger = logging.getLogger(__name__)

T = TypeVar("T")

_END = object()


class SynthesisCancelled(BaseException):
    """Raised inside the pipeline's generator to stop a live utterance.

    A ``BaseException`` on purpose: the pipeline treats ``Exception`` as a
    failure, while this must leave the record *cancelled* (the status its
    ``finally`` starts from) with the unspent characters refunded.
    """


def ensure_engine(prep: PreparedSynthesis) -> None:
    """Load the engine before any response is started, so that an engine that
    cannot load is a 503 the client can read, not a stream that breaks off."""
    if prep.cached is not None and prep.segment_source is None:
        return  # a cache hit needs no engine
    try:
        get_registry().get(prep.spec)
    except EngineError as exc:
        prep.admission.release()
        refund_characters(prep.reservation)
        record_finish(prep, status=SynthesisRecord.Status.FAILED, sink=None, error_code="engine_unavailable")
        raise SynthesisError(
            "The speech engine is not available right now.", code="engine_unavailable", status=503, retry_after=10
        ) from exc


class ThreadedStream(Generic[T]):
    """An async iterator over a sync generator that lives on its own thread.

    One thread per stream, not a shared pool: the generator's engine calls and
    the database writes in its ``finally`` must all happen on one thread so
    Django's per-thread connection is opened and closed by that thread.
    """

    def __init__(
        self,
        make_iter: Callable[[], Iterator[T]],
        *,
        abandon: Callable[[], None] | None = None,
        on_closed: Callable[[], None] | None = None,
        prefetch: bool = True,
        name: str = "tts-stream",
    ) -> None:
        self._make_iter = make_iter
        #: Runs on the stream's thread when it is closed before the generator ever
        #: started (a generator's ``finally`` does not run then).
        self._abandon = abandon
        #: Runs on the stream's thread after the generator is closed, however it ended.
        self._on_closed = on_closed
        self._iter: Iterator[T] | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: Future[Any] | None = None
        self._closed = False
        self._lock = threading.Lock()
        self.prefetch = prefetch
        #: Set on the stream's thread once the generator is closed and its connections are released.
        self.finished = threading.Event()

    # --- on the stream's thread ------------------------------------------

    def _step(self) -> Any:
        if self._iter is None:
            self._iter = self._make_iter()
        try:
            return next(self._iter)
        except StopIteration:
            return _END

    def _close_on_thread(self) -> None:
        try:
            if self._iter is None:
                if self._abandon is not None:
                    self._abandon()
            else:
                close = getattr(self._iter, "close", None)
                if close is not None:
                    close()
        except Exception:
            logger.exception("error while closing a synthesis stream")
        finally:
            try:
                if self._on_closed is not None:
                    self._on_closed()
            finally:
                connections.close_all()  # this thread's connections only; the thread ends here
                self.finished.set()

    # --- from asyncio ----------------------------------------------------

    def __aiter__(self) -> AsyncIterator[T]:
        return self

    async def __anext__(self) -> T:
        with self._lock:
            if self._closed:
                raise StopAsyncIteration
            future = self._pending or self._executor.submit(self._step)
            self._pending = None
        try:
            item = await asyncio.wrap_future(future)
        except SynthesisCancelled:
            self.close()
            raise StopAsyncIteration from None
        except BaseException:
            # Client gone (CancelledError) or the pipeline failed: either way no more segments.
            self.close()
            raise
        if item is _END:
            self.close()
            raise StopAsyncIteration
        with self._lock:
            if self.prefetch and not self._closed:
                self._pending = self._executor.submit(self._step)
        return item

    def close(self) -> None:
        """Stop now: start no further segment, close the generator on its thread. Never blocks."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pending, self._pending = self._pending, None
        if pending is not None:
            pending.cancel()  # only succeeds if the segment has not started: then it never will
        self._executor.submit(self._close_on_thread)
        self._executor.shutdown(wait=False)

    async def aclose(self) -> None:
        self.close()


def stream_synthesis(prep: PreparedSynthesis) -> ThreadedStream[bytes]:
    """The encoded audio of ``prep``, segment by segment, for an ASGI response."""
    return ThreadedStream(
        lambda: synthesis_iter_bytes(prep), abandon=lambda: abandon_synthesis(prep), name=f"tts-stream-{prep.record.pk}"
    )


def abandon_synthesis(prep: PreparedSynthesis) -> None:
    """Finish a prepared synthesis that never started: cancelled, everything refunded."""
    prep.admission.release()
    refund_characters(prep.reservation)
    record_finish(prep, status=SynthesisRecord.Status.CANCELLED, sink=None)


# --- WebSocket utterances ----------------------------------------------------


@dataclass
class _Piece:
    text: str
    segments: list[Segment]
    reservation: Reservation


@dataclass
class Alignment:
    """Estimated character timings of one audio chunk (ElevenLabs' ``alignment`` shape).

    Piper gives no per-character timings: the segment's speech time is spread
    evenly over its characters. Good enough for captions and barge-in bookkeeping.
    """

    chars: list[str]
    char_start_times_ms: list[int]
    char_durations_ms: list[int]

    def as_json(self) -> dict[str, Any]:
        return {
            "chars": self.chars,
            "charStartTimesMs": self.char_start_times_ms,
            "charDurationsMs": self.char_durations_ms,
        }


def estimate_alignment(text: str, seconds: float) -> Alignment:
    speech_ms = max(0.0, seconds * 1000 - settings.TTS_SENTENCE_SILENCE_MS)
    chars = list(text)
    if not chars:
        return Alignment([], [], [])
    step = speech_ms / len(chars)
    starts = [round(i * step) for i in range(len(chars))]
    durations = [round((i + 1) * step) - starts[i] for i in range(len(chars))]
    return Alignment(chars, starts, durations)


_EOS = object()
_CANCEL = object()


class LiveUtterance:
    """One utterance whose text arrives while it is being spoken.

    Created from the first piece's ``PreparedSynthesis`` (record and
    reservation already made). Later pieces are reserved on arrival
    (:meth:`reserve_piece`, on any thread) and handed to the generator's
    thread, which merges them into the one reservation and record as it
    reaches them: everything that touches ``prep`` happens on that thread.
    """

    def __init__(self, prep: PreparedSynthesis) -> None:
        self.prep = prep
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._cancelled = False
        self._lock = threading.Lock()
        self._accepting = True  # until the stream has closed and refunded what it never merged
        self._current: Segment | None = None
        self._spoken_text = prep.record.text
        prep.segment_source = self._segments()
        self.stream: ThreadedStream[tuple[bytes, Alignment | None]] = ThreadedStream(
            self._chunks,
            abandon=lambda: abandon_synthesis(prep),
            on_closed=self._refund_unmerged,
            name=f"tts-live-{prep.record.pk}",
        )

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    # --- any thread ------------------------------------------------------

    def add_text(self, text: str) -> bool:
        """Reserve one more piece of text and queue it; ``SynthesisError`` if refused.

        Blocking (database): call it from a worker thread. False when there was
        nothing to speak or the utterance is already over (then nothing is spent).
        """
        piece = self._reserve_piece(text)
        if piece is None:
            return False
        with self._lock:
            if self._accepting:
                self._queue.put(piece)
                return True
        refund_characters(piece.reservation)
        return False

    def _reserve_piece(self, text: str) -> _Piece | None:
        req = dataclasses.replace(self.prep.request, text=text)
        validate_text(req)
        segments = segments_for(req.text, req.language, req.normalization, req.text_field)
        if not segments:
            return None
        try:
            # The utterance already counted as one request when it opened.
            reservation = reserve_characters(tenant=req.tenant, characters=len(text), count_request=False)
        except QuotaExceeded as exc:
            raise SynthesisError(str(exc), code="quota_exceeded", status=429, retry_after=60) from exc
        return _Piece(text=text, segments=segments, reservation=reservation)

    def end(self) -> None:
        """No more text: speak what is queued, then finish the record."""
        self._queue.put(_EOS)

    def cancel(self) -> None:
        """Stop at the next segment boundary: record cancelled, unspent characters refunded."""
        self._cancelled = True
        self._queue.put(_CANCEL)
        self.stream.close()

    # --- the stream's thread ---------------------------------------------

    def _segments(self) -> Iterator[Segment]:
        for segment in list(self.prep.segments):
            self._check_cancelled()
            self._current = segment
            yield segment
        while True:
            item = self._queue.get()
            if item is _CANCEL or self._cancelled:
                if isinstance(item, _Piece):
                    self._queue.put(item)
                self._check_cancelled()
            if item is _EOS:
                return
            self._merge(item)
            for segment in item.segments:
                self._check_cancelled()
                self._current = segment
                yield segment

    def _check_cancelled(self) -> None:
        if self._cancelled:
            # Refund what never reached the pipeline before the pipeline finishes
            # the record, so that a cancelled record means all refunds are done.
            self._refund_unmerged()
            raise SynthesisCancelled

    def _merge(self, piece: _Piece) -> None:
        prep = self.prep
        prep.segments.extend(piece.segments)
        prep.characters += piece.reservation.characters
        prep.reservation.characters += piece.reservation.characters
        if prep.request.enable_logging:
            self._spoken_text += piece.text
            prep.record.text = self._spoken_text
            SynthesisRecord.objects.filter(pk=prep.record.pk).update(text=self._spoken_text)

    def _chunks(self) -> Iterator[tuple[bytes, Alignment | None]]:
        gen = cast(Generator[bytes, None, None], synthesis_iter_bytes(self.prep))
        seconds_before = 0.0
        try:
            for data in gen:
                segment = self._current
                chunk_start = seconds_before
                seconds = self.prep.audio_seconds - seconds_before
                seconds_before = self.prep.audio_seconds
                # The engine's phoneme timings when it has them (tts.services.timestamps), else an estimate.
                pending = self.prep.timeline.take_pending() if self.prep.timeline is not None else None
                timed = websocket_alignment(pending, chunk_start)
                if timed is not None:
                    yield data, Alignment(timed["chars"], timed["charStartTimesMs"], timed["charDurationsMs"])
                    continue
                yield data, estimate_alignment(segment.text, seconds) if segment is not None else None
        finally:
            if self._cancelled:
                self._refund_unmerged()
            gen.close()

    def _refund_unmerged(self) -> None:
        with self._lock:
            self._accepting = False
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Piece):
                refund_characters(item.reservation)


def segments_for(text: str, language: str | None, normalization: str, text_field: str) -> list[Segment]:
    """The speakable segments of ``text``; ``SynthesisError`` naming ``text_field`` if it cannot be read."""
    try:
        segments = prepare_text(
            text,
            language=language,
            normalization=normalization,  # type: ignore[arg-type]
            max_segment_chars=settings.TTS_SEGMENT_MAX_CHARS,
        )
    except TextError as exc:
        field_name = text_field if exc.field == "text" else exc.field
        raise SynthesisError(str(exc), code=exc.code, status=exc.status, field=field_name) from exc
    return [seg for seg in segments if seg.text.strip()]
