"""A fixed set of worker threads that run engine steps by priority, and within one
priority by key (a tenant) in turn, first come first served within a key.

One pool per engine, one thread per core (at one intra-op thread per run):
the CPU is never oversubscribed, a lone request's windows spread over every
core, and concurrent requests share the same threads instead of each
bringing their own. Lower priorities run first; the ONNX engine gives a
sentence's encoder run and its first window priority 0 (what a listener
waits for) and later windows priority 1.

Keys (tenants) come first, priorities only within a key's share: the next
task is the most urgent one of the waiting key with the least engine-seconds
lately (``engine_share``: the CPU time of every run is charged to its key, in
one ledger with the engine scheduler's runs). So a tenant whose four streams
queue late windows (priority 0) runs them ahead of its own whole-file work,
never ahead of another tenant's, and a tenant whose stream queued twenty later
windows delays another tenant's next window by at most the runs in progress.
The key is ``submit``'s ``key`` or, by default, the one set with ``work_key``
on the calling thread (the engine scheduler sets the tenant around each task).

**Cancel.** Work is queued on behalf of someone who may go away (a stream's
client). A :class:`CancelSignal` set with ``work_key(key, cancel=signal)`` is
captured by every ``submit`` from that context (here, in the engine scheduler
and in the batcher): setting it drops at once whatever it queued and has not
started, and ``raise_if_cancelled`` lets code between two engine calls (the
next sentence, the next piece of a long one) stop there. A run already inside
an engine finishes unless the engine can stop it safely: an ONNX Runtime run
is told to end at its next node (``onnx_cancel.cancellable_run``, what the
Kokoro engine's whole-sentence runs use); nothing is killed mid-kernel.

The threads hold the pool: its owner closes it (the engine does so from a
``weakref.finalize``, as the registry drops engines without closing them).

On Linux the workers run below the process's other threads by
``worker_nice`` (``set_worker_nice``; the platform sets it from
``TTS_ENGINE_NICE``): engine runs are batch work, while the threads that
hand a window's audio to its stream, the event loop and request threads are
what a listener and every other tenant wait on. With both cores decoding,
a stream's thread waited 4-10 ms for a core to pass on its first window
(2-3 ms with the workers at +10); nothing is slower when nothing else wants
the CPU.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import CancelledError, Future
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from .engine_share import EngineShare, engine_share
from .thread_nice import set_this_thread_below_base, start_thread

ResultT = TypeVar("ResultT")

logger = logging.getLogger(__name__)

#: How much lower than the process's other threads a pool's workers run (nice increment, Linux).
worker_nice = 0


def set_worker_nice(increment: int) -> None:
    """Workers of pools started from now on run ``increment`` (0-19) nice levels below the process."""
    global worker_nice
    worker_nice = max(0, min(19, int(increment)))


def _lower_this_thread(increment: int) -> None:
    """This thread ``increment`` nice levels below the process: an absolute value (``thread_nice``),
    never added to what it inherited."""
    set_this_thread_below_base(increment)


class WorkCancelled(CancelledError):
    """Raised between two engine calls of work whose ``CancelSignal`` is set."""


class CancelSignal:
    """Set once, from any thread, when nobody waits for the work any more (its client went away).

    Futures of work queued under it are tracked until they are done; ``set``
    cancels those that have not started, so no worker ever runs them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._futures: set[Future[Any]] = set()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next_callback = itertools.count()

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        with self._lock:
            if self._set:
                return
            self._set = True
            futures, self._futures = self._futures, set()
            callbacks, self._callbacks = list(self._callbacks.values()), {}
        for future in futures:
            future.cancel()  # False for one already running: it finishes, its result unread
        for callback in callbacks:
            try:
                callback()
            except Exception:  # never keep the others (or the closing stream) from stopping
                logger.exception("a cancel callback failed")

    def on_set(self, callback: Callable[[], None]) -> int:
        """Call ``callback`` (quick, any thread) when the signal is set, at once if it is; a handle to remove it."""
        with self._lock:
            if not self._set:
                handle = next(self._next_callback)
                self._callbacks[handle] = callback
                return handle
        callback()
        return -1

    def remove(self, handle: int) -> None:
        with self._lock:
            self._callbacks.pop(handle, None)

    def track(self, future: Future[Any]) -> None:
        """Cancel ``future`` when the signal is set (at once if it already is)."""
        with self._lock:
            if not self._set:
                self._futures.add(future)
                future.add_done_callback(self._discard)
                return
        future.cancel()

    def _discard(self, future: Future[Any]) -> None:
        with self._lock:
            self._futures.discard(future)


_current_key: ContextVar[Hashable] = ContextVar("tts_work_key", default=None)
_current_cancel: ContextVar[CancelSignal | None] = ContextVar("tts_work_cancel", default=None)


@contextmanager
def work_key(key: Hashable, *, cancel: CancelSignal | None = None) -> Iterator[None]:
    """Work submitted to any pool from this thread meanwhile is queued under ``key`` (and ``cancel``)."""
    token = _current_key.set(key)
    cancel_token = _current_cancel.set(cancel) if cancel is not None else None
    try:
        yield
    finally:
        if cancel_token is not None:
            _current_cancel.reset(cancel_token)
        _current_key.reset(token)


def current_cancel() -> CancelSignal | None:
    """The signal of the work this thread does now (set by ``work_key``), if any."""
    return _current_cancel.get()


def track_current(future: Future[Any]) -> None:
    """Tie ``future`` to the signal of the work this thread does now, if any."""
    signal = _current_cancel.get()
    if signal is not None:
        signal.track(future)


def raise_if_cancelled() -> None:
    """``WorkCancelled`` when the work this thread does now was cancelled: call it between engine calls."""
    signal = _current_cancel.get()
    if signal is not None and signal.is_set():
        raise WorkCancelled("the work was cancelled (its client went away)")


class TaskCounts:
    """Tasks the pools of this process ran, and dropped unrun (cancelled), since start."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.run = 0
        self.dropped = 0

    def add(self, *, ran: bool) -> None:
        with self._lock:
            if ran:
                self.run += 1
            else:
                self.dropped += 1


#: Every pool's counts, together (the metrics read them: ``tts_engine_tasks_total``).
task_counts = TaskCounts()


class PoolClosed(RuntimeError):
    """The pool was closed before the work ran."""


class WorkPool:
    def __init__(
        self, workers: int, *, name: str = "engine", nice: int | None = None, share: EngineShare | None = None
    ) -> None:
        self.workers = max(1, workers)
        self.nice = worker_nice if nice is None else nice
        self.share = engine_share if share is None else share
        self._name = name
        #: Per key (in the order keys arrived), its waiting tasks by priority, then first come.
        self._queues: dict[Hashable, list[tuple[int, int, Future[Any], Callable[[], Any]]]] = {}
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._busy = 0
        self._running: list[int] = []  # the priorities of the tasks running now
        self._closed = False
        self._spawned = itertools.count()
        self._threads: list[threading.Thread] = []
        for _ in range(self.workers):
            self._spawn()

    def _spawn(self) -> None:
        thread = threading.Thread(target=self._run, name=f"{self._name}-{next(self._spawned)}", daemon=True)
        self._threads.append(thread)
        start_thread(thread)  # at the process's nice, even when a demoted worker asks for its replacement

    @property
    def _queued(self) -> int:
        return sum(len(tasks) for tasks in self._queues.values())

    def submit(self, fn: Callable[[], ResultT], *, priority: int = 0, key: Hashable = None) -> Future[ResultT]:
        future: Future[ResultT] = Future()
        key = _current_key.get() if key is None else key
        with self._cond:
            if self._closed:
                raise PoolClosed("the engine's pool is closed")
            heapq.heappush(self._queues.setdefault(key, []), (priority, next(self._order), future, fn))
            self._cond.notify()
        track_current(future)
        return future

    def idle(self, priority: int | None = None) -> int:
        """Workers with nothing to do right now (neither running nor about to).

        With ``priority``: workers that no work of that priority or a more urgent one
        holds or waits for, i.e. that take new work of ``priority`` next, once what
        they run now (later windows of other streams) is done.
        """
        with self._cond:
            if priority is None:
                return max(0, self.workers - self._busy - self._queued)
            running = sum(1 for p in self._running if p <= priority)
            queued = sum(1 for tasks in self._queues.values() for entry in tasks if entry[0] <= priority)
            return max(0, self.workers - running - queued)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            pending = [entry for tasks in self._queues.values() for entry in tasks]
            self._queues = {}
            self._cond.notify_all()
        for _, _, future, _ in pending:
            if future.set_running_or_notify_cancel():
                future.set_exception(PoolClosed("the engine's pool closed"))

    def _run(self) -> None:
        _lower_this_thread(self.nice)
        while True:
            with self._cond:
                while not self._queues and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                key = self.share.least_used(self._queues)  # dicts keep arrival order: first of equals
                tasks = self._queues[key]
                priority, _, future, fn = heapq.heappop(tasks)
                if not tasks:
                    del self._queues[key]
                self._busy += 1
                self._running.append(priority)
            if not future.set_running_or_notify_cancel():
                with self._cond:
                    self._busy -= 1
                    self._running.remove(priority)
                task_counts.add(ran=False)
                continue
            task_counts.add(ran=True)
            error: BaseException | None = None
            result: Any = None
            with self.share.running(key) as outcome:
                try:
                    result = fn()
                except BaseException as exc:  # handed to the waiting caller
                    error = exc
            # Free before the caller wakes: what it asks of idle() next counts this worker.
            with self._cond:
                self._busy -= 1
                self._running.remove(priority)
                if outcome.retire and not self._closed:
                    # Demoted and not allowed back up: a fresh thread at the pool's nice takes its place.
                    self._threads.remove(threading.current_thread())
                    self._spawn()
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)
            del future, fn, result, error
            if outcome.retire:
                return
