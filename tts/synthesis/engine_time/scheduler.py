"""Engine time handed out per tenant in turn: engine-seconds, not requests.

Every engine call of a synthesis (a segment, or one window of a segment) is a
task queued under its tenant. Worker threads take the tasks of the waiting
tenant that has had the least engine time lately; within a tenant, tasks run
in the order they were queued.

**The rule.**

1. *Engine-seconds are shared, not requests.* Every run is charged to its
   tenant in one ledger per process (``tts.inference.engine_share``): at start
   its estimate (``engine_seconds``: the engine's cost per audio second,
   ``tts.synthesis.engine_time.cost``, times the segment's estimated audio), at the
   end the CPU time it really took. Usage decays (half-life
   ``TTS_ENGINE_SHARE_HALF_LIFE_S``), and the next task is the waiting
   tenant's with the least usage. A Kokoro sentence (about 12x a Piper one
   per second of audio) therefore costs its tenant twelve Piper turns; a
   tenant that had nothing waiting has little usage and goes next.
2. *Priority only within a tenant's share.* The engines' work pools
   (``tts.inference.work_pool``) pick the tenant first, by the same ledger,
   and only then the most urgent of that tenant's tasks (a late stream window
   before a whole-file window). One tenant's late streams never run ahead of
   another tenant's whole-file work.
3. *No tenant holds every worker.* There are ``TTS_ENGINE_SCHEDULER_WORKERS``
   workers (default twice the cores) and one tenant runs at most
   ``TTS_ENGINE_SCHEDULER_PER_TENANT`` (default the cores) at once, so another
   tenant's request finds a worker free even while a flood of Kokoro
   sentences (a second or more each) fills its share.
4. *A run in progress yields the CPU.* A run cannot be stopped inside ONNX
   Runtime; when a tenant with less usage starts one, the threads running
   dearer tenants' work are lowered to nice 19 until their run ends
   (``engine_share``: demotion), so the cheap request gets most of the cores
   at once instead of after the expensive one. Across processes of a host
   (web, Wyoming, Celery) the same ledger is shared through Redis
   (``tts.synthesis.engine_time.host_share``).

A task's engine call may queue several pieces of work in the engine's pool
(the ONNX engine's windows of a sentence, most of them still queued when the
task returns its first piece); they are queued under the task's tenant
(``work_pool.work_key``), and the pool too serves tenants in turn within a
priority, so tenant A's queued windows do not run ahead of B's next one.

The engine's own slots (``PiperOnnxEngine.concurrency``) still bound how many
calls run on one model at once; the workers here are more than the cores
(rule 3), and run at the engine pools' nice (``TTS_ENGINE_NICE``), so a Kokoro
sentence here and a Piper window in a pool share the CPU on equal terms.

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
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from tts.inference import work_pool
from tts.inference.cpus import available_cpus
from tts.inference.engine_share import EngineShare, RunOutcome, engine_share
from tts.inference.thread_nice import start_thread
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
    engine_seconds: float = 0.0


class FairScheduler:
    def __init__(
        self,
        workers: int | None = None,
        *,
        per_tenant: int | None = None,
        name: str = "tts-engine",
        share: EngineShare | None = None,
    ) -> None:
        cores = available_cpus()
        self.workers = max(1, workers or 2 * cores)
        #: How many workers one tenant may hold at once (rule 3).
        self.per_tenant = max(1, min(self.workers, per_tenant or cores))
        self.share = engine_share if share is None else share
        self._name = name
        self._cond = threading.Condition()
        #: Tenants with work waiting (in the order they arrived: ties go to the earlier), each with its tasks.
        self._queues: OrderedDict[Hashable, deque[_Task]] = OrderedDict()
        #: Tasks running now, per tenant.
        self._busy: dict[Hashable, int] = {}
        self._threads: list[threading.Thread] = []
        self._spawned = 0
        self._stopping = False
        #: Tasks a worker ran, and tasks dropped unrun (cancelled: their client went away), since start.
        self.tasks_run = 0
        self.tasks_dropped = 0

    def configure(self, *, workers: int, per_tenant: int) -> None:
        """Set the worker count and the per-tenant bound (settings; before the first task, or to grow)."""
        with self._cond:
            self.workers = max(1, workers)
            self.per_tenant = max(1, min(self.workers, per_tenant))
            if self._threads:
                self._start_workers()

    def submit(
        self,
        key: Hashable,
        fn: Callable[..., T],
        *args: Any,
        cancel: CancelSignal | None = None,
        engine_seconds: float = 0.0,
        **kwargs: Any,
    ) -> Future[T]:
        """Queue ``fn(*args, **kwargs)`` under ``key`` (a tenant); cancel the future, or set ``cancel``, to drop it.

        ``engine_seconds``: what the run is expected to cost, charged when it starts (rule 1).
        """
        future: Future[T] = Future()
        with self._cond:
            if self._stopping:
                raise RuntimeError("the engine scheduler has shut down (the process is exiting)")
            self._start_workers()
            self._queues.setdefault(key, deque()).append(_Task(future, key, fn, args, kwargs, cancel, engine_seconds))
            self._cond.notify()
        if cancel is not None:
            cancel.track(future)
        return future

    def run(
        self,
        key: Hashable,
        fn: Callable[..., T],
        *args: Any,
        cancel: CancelSignal | None = None,
        engine_seconds: float = 0.0,
        **kwargs: Any,
    ) -> T:
        """``fn(*args, **kwargs)`` in the tenant's turn; blocks until it is done (never call from a worker).

        ``WorkCancelled`` when ``cancel`` was set before the task started.
        """
        future = self.submit(key, fn, *args, cancel=cancel, engine_seconds=engine_seconds, **kwargs)
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
            thread = threading.Thread(target=self._work, name=f"{self._name}-{self._spawned}", daemon=True)
            self._spawned += 1
            self._threads.append(thread)
            start_thread(thread)  # at the process's nice, even when a demoted worker asks for its replacement

    def shutdown(self, timeout: float = 30.0) -> None:
        """Cancel the tasks still waiting, let running ones finish, stop the workers."""
        with self._cond:
            self._stopping = True
            for tasks in self._queues.values():
                for task in tasks:
                    task.future.cancel()
            self._queues.clear()
            self._cond.notify_all()
        for thread in list(self._threads):
            if thread is not threading.current_thread():
                thread.join(timeout)

    def _eligible(self) -> list[Hashable]:
        return [key for key in self._queues if self._busy.get(key, 0) < self.per_tenant]

    def _next(self) -> _Task:
        with self._cond:
            while True:
                while not (eligible := self._eligible()):
                    if self._stopping and not self._queues:
                        raise _Stopped
                    self._cond.wait()
                key = self.share.least_used(eligible)  # the first of equals: the earlier arrival
                tasks = self._queues[key]
                task = tasks.popleft()
                if not tasks:
                    del self._queues[key]
                if task.future.cancelled():  # (one whose stream went away spends no turn)
                    self.tasks_dropped += 1
                    continue
                self._busy[key] = self._busy.get(key, 0) + 1
                return task

    def _done(self, key: Hashable) -> None:
        with self._cond:
            left = self._busy.get(key, 1) - 1
            if left:
                self._busy[key] = left
            else:
                self._busy.pop(key, None)
            self._cond.notify()  # a tenant held at its bound may take a worker now

    def _work(self) -> None:
        # At the engine pools' nice: a Kokoro run here shares the CPU with Piper's windows evenly.
        work_pool._lower_this_thread(work_pool.worker_nice)
        while True:
            try:
                task = self._next()
            except _Stopped:
                return
            except Exception:  # never lose a worker (and with it every task it would run)
                logger.exception("engine scheduler: could not take the next task")
                continue
            if not task.future.set_running_or_notify_cancel():
                self._done(task.key)
                with self._cond:
                    self.tasks_dropped += 1
                continue  # cancelled just now
            with self._cond:
                self.tasks_run += 1
            outcome = RunOutcome()
            try:
                # The engine's pool queues the windows this task submits under the same tenant.
                with (
                    work_key(task.key, cancel=task.cancel),
                    self.share.running(task.key, estimate=task.engine_seconds) as outcome,
                ):
                    result = task.fn(*task.args, **task.kwargs)
            except BaseException as exc:
                self._done(task.key)
                task.future.set_exception(exc)
            else:
                self._done(task.key)
                task.future.set_result(result)
            del task
            if outcome.retire:
                # Demoted and not allowed back up: a fresh worker at the engine's nice takes this one's place.
                with self._cond:
                    self._threads.remove(threading.current_thread())
                    if not self._stopping:
                        self._start_workers()
                return


def queues_fairly(engine: object) -> bool:
    """Whether ``engine`` queues each of its runs under the calling thread's ``work_key``, tenants in turn."""
    return bool(getattr(engine, "queues_fairly", False))


#: The process's scheduler: every synthesis, stream, WebSocket utterance and job uses it.
engine_scheduler = FairScheduler(name="tts-engine")
