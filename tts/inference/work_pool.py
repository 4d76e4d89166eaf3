"""A fixed set of worker threads that run engine steps by priority, first come first served within one.

One pool per engine, one thread per core (at one intra-op thread per run):
the CPU is never oversubscribed, a lone request's windows spread over every
core, and concurrent requests share the same threads instead of each
bringing their own. Lower priorities run first; the ONNX engine gives a
sentence's encoder run and its first window priority 0 (what a listener
waits for) and later windows priority 1.

The threads hold the pool: its owner closes it (the engine does so from a
``weakref.finalize``, as the registry drops engines without closing them).
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

ResultT = TypeVar("ResultT")


class PoolClosed(RuntimeError):
    """The pool was closed before the work ran."""


class WorkPool:
    def __init__(self, workers: int, *, name: str = "engine") -> None:
        self.workers = max(1, workers)
        self._queue: list[tuple[int, int, Future[Any], Callable[[], Any]]] = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._busy = 0
        self._closed = False
        self._threads = [
            threading.Thread(target=self._run, name=f"{name}-{i}", daemon=True) for i in range(self.workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[[], ResultT], *, priority: int = 0) -> Future[ResultT]:
        future: Future[ResultT] = Future()
        with self._cond:
            if self._closed:
                raise PoolClosed("the engine's pool is closed")
            heapq.heappush(self._queue, (priority, next(self._order), future, fn))
            self._cond.notify()
        return future

    def idle(self) -> int:
        """Workers with nothing to do right now (neither running nor about to)."""
        with self._cond:
            return max(0, self.workers - self._busy - len(self._queue))

    def close(self) -> None:
        with self._cond:
            self._closed = True
            pending, self._queue = self._queue, []
            self._cond.notify_all()
        for _, _, future, _ in pending:
            if future.set_running_or_notify_cancel():
                future.set_exception(PoolClosed("the engine's pool closed"))

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                _, _, future, fn = heapq.heappop(self._queue)
                self._busy += 1
            if not future.set_running_or_notify_cancel():
                with self._cond:
                    self._busy -= 1
                continue
            error: BaseException | None = None
            result: Any = None
            try:
                result = fn()
            except BaseException as exc:  # handed to the waiting caller
                error = exc
            # Free before the caller wakes: what it asks of idle() next counts this worker.
            with self._cond:
                self._busy -= 1
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)
            del future, fn, result, error
