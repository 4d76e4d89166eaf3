"""A fixed set of worker threads that run engine steps by priority, and within one
priority by key (a tenant) in turn, first come first served within a key.

One pool per engine, one thread per core (at one intra-op thread per run):
the CPU is never oversubscribed, a lone request's windows spread over every
core, and concurrent requests share the same threads instead of each
bringing their own. Lower priorities run first; the ONNX engine gives a
sentence's encoder run and its first window priority 0 (what a listener
waits for) and later windows priority 1.

Within a priority, keys take turns (start-time fair queuing, as
``tts.services.engine_scheduler``): a task is tagged one past the later of its
key's last tag and the tag of the task that started last, and the smallest
tag runs first. So a tenant whose stream queued twenty later windows delays
another tenant's next window by at most one of them, not twenty. The key is
``submit``'s ``key`` or, by default, the one set with ``work_key`` on the
calling thread (the engine scheduler sets the tenant around each task).

The threads hold the pool: its owner closes it (the engine does so from a
``weakref.finalize``, as the registry drops engines without closing them).
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

ResultT = TypeVar("ResultT")

_current_key: ContextVar[Hashable] = ContextVar("tts_work_key", default=None)


@contextmanager
def work_key(key: Hashable) -> Iterator[None]:
    """Work submitted to any pool from this thread meanwhile is queued under ``key``."""
    token = _current_key.set(key)
    try:
        yield
    finally:
        _current_key.reset(token)


class PoolClosed(RuntimeError):
    """The pool was closed before the work ran."""


class WorkPool:
    def __init__(self, workers: int, *, name: str = "engine") -> None:
        self.workers = max(1, workers)
        self._queue: list[tuple[int, int, int, Future[Any], Callable[[], Any]]] = []
        self._order = itertools.count()
        #: Per key, the tag of its last queued task; and the tag of the task that started last.
        self._tags: dict[Hashable, int] = {}
        self._vnow = 0
        self._cond = threading.Condition()
        self._busy = 0
        self._closed = False
        self._threads = [
            threading.Thread(target=self._run, name=f"{name}-{i}", daemon=True) for i in range(self.workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[[], ResultT], *, priority: int = 0, key: Hashable = None) -> Future[ResultT]:
        future: Future[ResultT] = Future()
        key = _current_key.get() if key is None else key
        with self._cond:
            if self._closed:
                raise PoolClosed("the engine's pool is closed")
            tag = max(self._tags.get(key, 0), self._vnow) + 1
            self._tags[key] = tag
            heapq.heappush(self._queue, (priority, tag, next(self._order), future, fn))
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
        for *_, future, _ in pending:
            if future.set_running_or_notify_cancel():
                future.set_exception(PoolClosed("the engine's pool closed"))

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                _, tag, _, future, fn = heapq.heappop(self._queue)
                self._vnow = max(self._vnow, tag)
                if not self._queue:
                    self._tags.clear()  # everyone caught up: the next task of any key starts at now
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
