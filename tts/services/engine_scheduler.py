"""Engine time handed out per tenant in turn.

Every engine call of a synthesis (a segment, or one window of a segment) is a
task queued under its tenant. A fixed set of worker threads (one per core)
takes tasks round-robin over the tenants that have work waiting: one task of
tenant A, then one of B, then A again. A tenant that queues many segments (its
plan's stream cap, each stream synthesizing ahead) therefore delays another
tenant's short request by at most the tasks already running, never by its
whole queue. Within a tenant, tasks run in the order they were queued.

"In turn" is start-time fair queuing: each tenant has a virtual time that
grows by one with every task of its that starts, and the next task is the
waiting tenant's with the smallest; a tenant that had nothing waiting joins
at the current time, so it neither jumps ahead by its idle past nor waits
behind what others queued while it was idle.

A task's engine call may queue several pieces of work in the engine's pool
(the ONNX engine's windows of a sentence, most of them still queued when the
task returns its first piece); they are queued under the task's tenant
(``work_pool.work_key``), and the pool too serves tenants in turn within a
priority, so tenant A's queued windows do not run ahead of B's next one.

The engine's own slots (``PiperOnnxEngine.concurrency``) still bound how many
calls run on one model at once; the workers here are as many as the cores, so
they never leave a core idle that the engine could use.

A task submitted with ``cancel`` (the ``CancelSignal`` of a stream whose
client may go away) is dropped, unrun, as soon as the signal is set, and the
work it queues in the engine's pool or batcher is tied to the same signal
(``work_pool.work_key``): a gone client's look-ahead segments and queued
windows never reach a core, whichever engine it was.

An engine that queues every run in such a pool itself (``queues_fairly``: the
ONNX Piper engine) needs no turn here for a stream's windows: ``iterate(...,
inline=True)`` steps it on the caller's thread under the tenant's key.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from tts.inference.work_pool import CancelSignal, WorkCancelled, work_key

logger = logging.getLogger(__name__)

T = TypeVar("T")


class _Stopped(Exception):
    pass


@dataclass
class _Task:
    future: Future[Any]
    key: Hashable
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    cancel: CancelSignal | None = None


class FairScheduler:
    def __init__(self, workers: int | None = None, *, name: str = "tts-engine") -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._name = name
        self._cond = threading.Condition()
        #: Tenants with work waiting (in the order they arrived: ties go to the earlier), each with its tasks.
        self._queues: OrderedDict[Hashable, deque[_Task]] = OrderedDict()
        #: Virtual time per tenant: tasks started, counted from when it last joined.
        self._vtime: dict[Hashable, int] = {}
        self._now = 0
        self._threads: list[threading.Thread] = []
        self._stopping = False
        #: Tasks a worker ran, and tasks dropped unrun (cancelled: their client went away), since start.
        self.tasks_run = 0
        self.tasks_dropped = 0

    def submit(
        self, key: Hashable, fn: Callable[..., T], *args: Any, cancel: CancelSignal | None = None, **kwargs: Any
    ) -> Future[T]:
        """Queue ``fn(*args, **kwargs)`` under ``key`` (a tenant); cancel the future, or set ``cancel``, to drop it."""
        future: Future[T] = Future()
        with self._cond:
            if self._stopping:
                raise RuntimeError("the engine scheduler has shut down (the process is exiting)")
            self._start_workers()
            if key not in self._queues:
                self._vtime[key] = max(self._vtime.get(key, 0), self._now)
                self._queues[key] = deque()
            self._queues[key].append(_Task(future, key, fn, args, kwargs, cancel))
            self._cond.notify()
        if cancel is not None:
            cancel.track(future)
        return future

    def run(
        self, key: Hashable, fn: Callable[..., T], *args: Any, cancel: CancelSignal | None = None, **kwargs: Any
    ) -> T:
        """``fn(*args, **kwargs)`` in the tenant's turn; blocks until it is done (never call from a worker).

        ``WorkCancelled`` when ``cancel`` was set before the task started.
        """
        future = self.submit(key, fn, *args, cancel=cancel, **kwargs)
        try:
            return future.result()
        except CancelledError:
            raise WorkCancelled("the engine task was dropped: its client went away") from None

    def iterate(
        self, key: Hashable, items: Iterator[T], *, inline: bool = False, cancel: CancelSignal | None = None
    ) -> Iterator[T]:
        """Each step of ``items`` (e.g. an engine decoding a sentence in windows) in the tenant's turn.

        ``inline``: the steps run on the calling thread, their engine work queued under
        ``key`` in the engine's own pool, which serves tenants in turn itself
        (``queues_fairly``). A step that only waits for the pool then holds none of
        this scheduler's workers: four streams of one tenant, each waiting for its
        next window, had held both workers of a 2-core machine, and another tenant's
        short request waited for one of them on top of its turn in the pool.

        ``cancel``: no step starts once it is set (``WorkCancelled``), and what a
        step queued in the engine's pool is dropped.
        """
        done = object()
        while True:
            if cancel is not None and cancel.is_set():
                raise WorkCancelled("the engine work was cancelled: its client went away")
            if inline:
                with work_key(key, cancel=cancel):
                    item: Any = next(items, done)
            else:
                item = self.run(key, next, items, done, cancel=cancel)
            if item is done:
                return
            yield cast(T, item)

    def waiting(self) -> dict[Hashable, int]:
        """Tasks waiting per tenant (not those running)."""
        with self._cond:
            return {key: len(tasks) for key, tasks in self._queues.items()}

    # --- workers ---------------------------------------------------------

    def _start_workers(self) -> None:
        if not self._threads:
            # Like concurrent.futures: at interpreter exit, drop what waits and let running
            # engine calls end (a native engine thread killed mid-call aborts the process).
            threading._register_atexit(self.shutdown)  # type: ignore[attr-defined]
        while len(self._threads) < self.workers:
            thread = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def shutdown(self, timeout: float = 30.0) -> None:
        """Cancel the tasks still waiting, let running ones finish, stop the workers."""
        with self._cond:
            self._stopping = True
            for tasks in self._queues.values():
                for task in tasks:
                    task.future.cancel()
            self._queues.clear()
            self._cond.notify_all()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    def _next(self) -> _Task:
        with self._cond:
            while True:
                while not self._queues:
                    if self._stopping:
                        raise _Stopped
                    self._cond.wait()
                key = min(self._queues, key=self._vtime.__getitem__)  # min() keeps the first of equals
                tasks = self._queues[key]
                task = tasks.popleft()
                if not task.future.cancelled():  # (one whose stream went away spends no turn)
                    self._now = self._vtime[key]
                    self._vtime[key] += 1
                if not tasks:
                    del self._queues[key]
                    self._forget_idle()  # after the turn is counted: it reads and drops times
                if not task.future.cancelled():
                    return task
                self.tasks_dropped += 1

    def _forget_idle(self) -> None:
        """Drop the times of idle tenants that are not ahead of now: joining again gives them ``now``."""
        if len(self._vtime) > 4 * len(self._queues) + 64:
            self._vtime = {k: v for k, v in self._vtime.items() if k in self._queues or v > self._now}

    def _work(self) -> None:
        while True:
            try:
                task = self._next()
            except _Stopped:
                return
            except Exception:  # never lose a worker (and with it every task it would run)
                logger.exception("engine scheduler: could not take the next task")
                continue
            if not task.future.set_running_or_notify_cancel():
                with self._cond:
                    self.tasks_dropped += 1
                continue  # cancelled just now
            with self._cond:
                self.tasks_run += 1
            try:
                # The engine's pool queues the windows this task submits under the same tenant.
                with work_key(task.key, cancel=task.cancel):
                    result = task.fn(*task.args, **task.kwargs)
            except BaseException as exc:
                task.future.set_exception(exc)
            else:
                task.future.set_result(result)


def queues_fairly(engine: object) -> bool:
    """Whether ``engine`` queues each of its runs under the calling thread's ``work_key``, tenants in turn."""
    return bool(getattr(engine, "queues_fairly", False))


#: The process's scheduler: every synthesis, stream, WebSocket utterance and job uses it.
engine_scheduler = FairScheduler(name="tts-engine")
