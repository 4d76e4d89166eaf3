"""Streaming synthesis: the one pipeline (``synthesis_iter_bytes``) read from asyncio.

Two pieces, both built on the pipeline's sync generator rather than beside it:

* :class:`ThreadedStream` runs a generator on one dedicated thread and hands
  its items to asyncio. The next item is started as soon as one is handed
  over and no sooner, so at most one segment is synthesized ahead of what the
  client has taken (backpressure towards the engine). ``close()`` never
  blocks: it sets the run's stop signal at once (the engine work the stream
  queued and has not started is dropped, and no further sentence or window
  starts: ``SynthesisRun.stop``), cancels the prefetch if it has not started,
  then closes the generator on its own thread (cancelled record, refund of
  what was never synthesized) and closes that thread's database connections.
* :class:`LiveUtterance` is one WebSocket utterance: text arrives in pieces,
  each piece reserves its characters when it arrives and hands them to the
  utterance's run (``SynthesisRun.add_piece``), and its segments are fed to
  the same generator through ``SynthesisRun.segment_source``, so one
  utterance is one run: one history record, one reservation and one
  continuous encoded stream.

Nothing here knows HTTP or WebSockets; ``tts.api.streaming`` and
``tts.api.websocket.consumers`` do.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar, cast

from django.db import connections

from tts.errors import SynthesisCancelled
from tts.inference.pacing import StreamLead
from tts.pronunciation import billed_characters
from tts.synthesis.alignment.timeline import AlignmentChunk, MessageClock, estimate_alignment
from tts.synthesis.runs import metrics
from tts.synthesis.runs.run import SynthesisRun
from tts.synthesis.stages.admit import admit_piece
from tts.synthesis.stages.deliver import synthesis_iter_bytes
from tts.synthesis.stages.open_run import open_piece
from tts.synthesis.stages.prepare import prepare_piece
from tts.synthesis.stages.prepared_billing import UtteranceBill
from tts.synthesis.stages.resolve import resolve_piece
from tts.text.segment import Segment

logger = logging.getLogger(__name__)

T = TypeVar("T")

_END = object()


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
        abandon: Callable[[], object] | None = None,
        on_closed: Callable[[], None] | None = None,
        stop: Callable[[], None] | None = None,
        prefetch: bool = True,
        name: str = "tts-stream",
        sent: Callable[[], None] | None = None,
    ) -> None:
        self._make_iter = make_iter
        #: Called from asyncio as each item is handed to the connection (the stream's pace).
        self._sent = sent
        #: Runs at once on the thread that closes the stream (never blocks): stops the engine work.
        self._stop = stop
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
        if self._sent is not None:
            self._sent()
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
        if self._stop is not None:
            self._stop()  # before the stream's thread is back: what it queued never starts
        if pending is not None:
            pending.cancel()  # only succeeds if the segment has not started: then it never will
        self._executor.submit(self._close_on_thread)
        self._executor.shutdown(wait=False)

    async def aclose(self) -> None:
        self.close()


def run_stream(run: SynthesisRun, make_iter: Callable[[], Iterator[T]], *, name: str) -> ThreadedStream[T]:
    """``make_iter()`` (a generator over ``run``'s pipeline) on its own thread, owned by ``run``.

    Every stream of a run is made here, so each one, whatever the route (chunked HTTP,
    SSE, timestamps, both WebSockets and Wyoming through the utterance driver), cancels
    the run if it never started, stops its engine work the moment it closes, and
    measures its lead over playback from what it hands the connection (``run.pace``,
    which the windowed engines read: small windows only while the listener waits).
    """
    pace = run.pace
    if pace is None:
        pace = StreamLead(on_sent=metrics.stream_chunk_sent)
        run.paced(pace)
    return ThreadedStream(
        make_iter, abandon=run.cancel, stop=run.stop.set, name=f"{name}-{run.record.pk}", sent=pace.sent
    )


def stream_synthesis(run: SynthesisRun) -> ThreadedStream[bytes]:
    """The encoded audio of ``run``, segment by segment, for an ASGI response."""
    return run_stream(run, lambda: synthesis_iter_bytes(run), name="tts-stream")


# --- WebSocket utterances ----------------------------------------------------


_EOS = object()
_CANCEL = object()
_WAKE = object()


class LiveUtterance:
    """One utterance whose text arrives while it is being spoken.

    Created from the first piece's run (record and reservation already made).
    Later pieces are reserved on arrival (:meth:`add_text`, on any thread) and
    handed to the run at once (``SynthesisRun.add_piece``), so the run's finish
    refunds whatever was reserved and never spoken; their segments are queued
    for the generator's thread, which speaks them in order.

    While everything received has been spoken and the client has not ended,
    the utterance is idle and holds neither a concurrency slot nor an engine
    ticket (``SynthesisRun.idle``); the next piece takes them again
    (``resume``), or is refused like a new request if the tenant is at its cap.
    """

    def __init__(self, run: SynthesisRun) -> None:
        self.run = run
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._cancelled = False
        self._current: Segment | None = None
        self._lock = threading.Lock()
        #: Pieces queued and not yet spoken to their last segment.
        self._pending = 0
        #: What the utterance's pieces bill so far, by the request's rule over the whole utterance
        #: (one free expansion per utterance: ``tts.synthesis.stages.prepared_billing``).
        req = run.request
        self._bill = UtteranceBill.opening(billed_characters(req.text, run.spoken_text or req.text), run.segments)
        self._bill_lock = threading.Lock()
        # The opening piece's segments, taken now: later pieces extend ``run.segments`` and come
        # through the queue, so a snapshot taken when the stream's thread starts (late, on a busy
        # machine) held the next piece too and spoke it twice.
        run.live(self._segments(list(run.segments)))
        self.stream: ThreadedStream[tuple[bytes, AlignmentChunk | None]] = run_stream(
            run, self._chunks, name="tts-live"
        )

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    # --- any thread ------------------------------------------------------

    def add_text(self, text: str) -> bool:
        """One more piece of text through the pipeline's stages, then queued; ``SynthesisError`` if refused.

        The piece is an input to the request's stages, not a copy of them: resolve (its text
        checked, its language), admit (a slot and a ticket again if the utterance was idle),
        prepare (the dictionaries, segments, the engine time left) and open (its characters
        reserved and handed to the run). Blocking (database): call it from a worker thread.
        False when there was nothing to speak or the utterance is already over (then nothing is spent).
        """
        resolved = resolve_piece(self.run, text)
        with self._lock:
            admit_piece(self.run)
            self._pending += 1
        try:
            with self._bill_lock:  # pieces bill in the order they are taken
                prepared, bill = prepare_piece(resolved, budget=self.run.engine_budget, bill=self._bill)
                if not prepared.segments:
                    self._piece_refused()
                    return False
                if not open_piece(self.run, prepared):
                    return False
                self._bill = bill
        except BaseException:
            self._piece_refused()
            raise
        self._queue.put(prepared.segments)
        return True

    def _piece_done(self) -> None:
        with self._lock:
            self._pending -= 1

    def _piece_refused(self) -> None:
        """A piece taken in and then refused (or found empty): the stream's thread is woken to
        look again, so that with nothing left to speak it gives its slot and ticket back."""
        self._piece_done()
        self._queue.put(_WAKE)

    def unspoken_characters(self) -> int:
        """Characters reserved for this utterance and not spoken yet."""
        return max(0, self.run.characters - self.run.spent_characters())

    def end(self) -> None:
        """No more text: speak what is queued, then finish the record."""
        self._queue.put(_EOS)

    def cancel(self) -> None:
        """Stop at the next segment boundary: record cancelled, unspent characters refunded."""
        self._cancelled = True
        self._queue.put(_CANCEL)
        self.stream.close()

    # --- the stream's thread ---------------------------------------------

    def _segments(self, opening: list[Segment]) -> Iterator[Segment]:
        for segment in opening:
            self._check_cancelled()
            self._current = segment
            yield segment
        while True:
            with self._lock:
                if self._pending == 0:
                    self.run.idle()  # all spoken: hold nothing while the client thinks
            item = self._queue.get()
            self._check_cancelled()
            if item is _EOS:
                return
            if item is _CANCEL or item is _WAKE:
                continue
            for segment in item:
                self._check_cancelled()
                self._current = segment
                yield segment
            self._piece_done()

    def _check_cancelled(self) -> None:
        if self._cancelled:
            raise SynthesisCancelled

    def _chunks(self) -> Iterator[tuple[bytes, AlignmentChunk | None]]:
        """Each encoded chunk with the characters its audio covers (absolute times).

        A segment decoded in windows goes out window by window, its timing
        known from the first: each chunk carries the characters that start
        within the audio sent so far (the rest wait for the chunk that
        reaches them), so alignment and audio advance together.

        Each alignment is framed for the message it goes in by ``MessageClock``.
        """
        run = self.run
        clock = MessageClock(from_start=run.request.alignment_from_start)
        gen = cast(Generator[bytes, None, None], synthesis_iter_bytes(run))
        seconds_before = 0.0
        held = AlignmentChunk()  # characters known and not yet sent, for a segment decoded in windows
        aligned: Segment | None = None  # the segment whose characters went out already (no timeline)
        try:
            for data in gen:
                segment = self._current
                chunk_start, chunk_end = seconds_before, run.audio_seconds
                seconds_before = chunk_end
                chunk: AlignmentChunk | None = None
                # The engine's phoneme timings when it has them (tts.synthesis.alignment.timestamps), else an estimate.
                if run.timeline is not None:
                    pending = run.timeline.take_pending()
                    if pending is not None:
                        held.merge(pending)
                    # The characters that start within the audio sent so far; none for a tail
                    # (a resampler's or encoder's) or a window whose characters went out before.
                    chunk = held.take_before(chunk_end + _EPSILON_S)
                    aligned = segment
                elif segment is not None and segment is not aligned:
                    aligned = segment
                    chunk = estimate_alignment(segment.text, chunk_start, chunk_end - chunk_start)
                yield data, clock.place(chunk, chunk_end)
        finally:
            gen.close()


# Characters that start within half a millisecond of the audio's end go with it.
_EPSILON_S = 0.0005
