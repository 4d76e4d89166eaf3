"""Dynamic batching: items submitted by concurrent callers run together as one batch.

One worker thread per batcher takes the oldest waiting item, waits up to
``max_wait_ms`` for company (or until ``max_batch_size`` items wait), then
runs the oldest items that fit ``max_batch_size`` and ``max_batch_cost`` as
one call of ``run_batch``. Items are admitted strictly first in, first out,
and a batch is capped in size and padded cost, so an item waits at most
``max_wait_ms`` for companions plus the run time of the capped batches queued
before it; nothing is ever overtaken.

The batcher knows nothing about models: the engine pads items to length
buckets (``bucket_length``) inside ``run_batch`` and cuts each result to its
own length. Knows nothing of Django either.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .work_pool import track_current

logger = logging.getLogger(__name__)

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")


def bucket_length(length: int, *, granularity: int = 16) -> int:
    """Round ``length`` up to one of a few sizes per octave (at most 25 % padding).

    Batches are padded to these sizes so the device sees a bounded set of
    shapes (cuDNN autotuning and kernel caches work per shape).
    """
    if length <= granularity:
        return granularity
    step = max(granularity, 2 ** (math.floor(math.log2(length)) - 2))
    return math.ceil(length / step) * step


class BatcherClosed(RuntimeError):
    """The batcher was closed before the item ran."""


@dataclass
class _Waiting(Generic[ItemT, ResultT]):
    item: ItemT
    cost: int
    future: Future[ResultT] = field(default_factory=Future)
    enqueued: float = field(default_factory=time.monotonic)


class DynamicBatcher(Generic[ItemT, ResultT]):
    """Collects items from many threads and runs them in batches on one worker thread.

    ``run_batch`` gets the items of one batch in submission order and returns
    one result per item; if it raises, every item of that batch fails with
    the exception. ``cost`` gives an item's padded size: a batch's cost is
    its size times its largest item's cost.
    """

    def __init__(
        self,
        run_batch: Callable[[list[ItemT]], Sequence[ResultT]],
        *,
        cost: Callable[[ItemT], int],
        max_batch_size: int = 16,
        max_batch_cost: int | None = None,
        max_wait_ms: float = 4.0,
        name: str = "batcher",
    ) -> None:
        self._run_batch = run_batch
        self._cost = cost
        self.max_batch_size = max(1, max_batch_size)
        self.max_batch_cost = max_batch_cost
        self.max_wait = max_wait_ms / 1000
        self._queue: deque[_Waiting[ItemT, ResultT]] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self.batches_run = 0  # counters for metrics and tests; written by the worker only
        self.items_run = 0
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def submit(self, item: ItemT) -> Future[ResultT]:
        """Queue ``item``; the future resolves to its result (cancel it to drop the item if not yet started)."""
        waiting: _Waiting[ItemT, ResultT] = _Waiting(item, self._cost(item))
        with self._cond:
            if self._closed:
                raise BatcherClosed("batcher is closed")
            self._queue.append(waiting)
            self._cond.notify()
        track_current(waiting.future)  # a stream whose client left drops what it queued here
        return waiting.future

    def close(self) -> None:
        """Stop the worker after the batch in progress; items still queued fail with ``BatcherClosed``."""
        with self._cond:
            self._closed = True
            dropped = list(self._queue)
            self._queue.clear()
            self._cond.notify_all()
        for waiting in dropped:
            if waiting.future.set_running_or_notify_cancel():
                waiting.future.set_exception(BatcherClosed("batcher closed before the item ran"))
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def _next_batch(self) -> list[_Waiting[ItemT, ResultT]]:
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if self._closed:
                return []
            deadline = self._queue[0].enqueued + self.max_wait
            while len(self._queue) < self.max_batch_size and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            batch: list[_Waiting[ItemT, ResultT]] = []
            peak = 0
            while self._queue and len(batch) < self.max_batch_size:
                candidate = self._queue[0]
                new_peak = max(peak, candidate.cost)
                # The oldest item always goes, even alone over the cost cap.
                if batch and self.max_batch_cost is not None and new_peak * (len(batch) + 1) > self.max_batch_cost:
                    break
                self._queue.popleft()
                if candidate.future.set_running_or_notify_cancel():  # False: the caller gave up on it
                    batch.append(candidate)
                    peak = new_peak
            return batch

    def _work(self) -> None:
        while not self._closed:
            batch = self._next_batch()
            if not batch:
                continue
            self.batches_run += 1
            self.items_run += len(batch)
            try:
                results = self._run_batch([waiting.item for waiting in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"run_batch returned {len(results)} results for {len(batch)} items")
            except Exception as exc:
                logger.exception("batch of %d failed", len(batch))
                for waiting in batch:
                    waiting.future.set_exception(exc)
                continue
            for waiting, result in zip(batch, results, strict=True):
                waiting.future.set_result(result)
