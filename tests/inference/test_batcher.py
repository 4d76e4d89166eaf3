"""The dynamic batcher: batch formation, waiting bounds, order, cost caps, failures."""

from __future__ import annotations

import threading
import time

import pytest

from tts.inference.batcher import BatcherClosed, DynamicBatcher, bucket_length


def _wait_for(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_it_buckets_lengths_with_bounded_padding() -> None:
    buckets = {bucket_length(n) for n in range(1, 4097)}
    for n in range(1, 4097):
        assert n <= bucket_length(n) < n + max(16, n / 4)
    assert len(buckets) <= 40  # a few shapes per octave, not one per length


def test_it_runs_concurrent_items_as_one_batch() -> None:
    calls: list[list[int]] = []

    def run(items: list[int]) -> list[int]:
        calls.append(list(items))
        return [item * 2 for item in items]

    batcher = DynamicBatcher(run, cost=lambda item: 1, max_batch_size=8, max_wait_ms=300)
    futures = [batcher.submit(i) for i in range(5)]
    assert [f.result(timeout=5) for f in futures] == [0, 2, 4, 6, 8]
    assert calls == [[0, 1, 2, 3, 4]]
    assert (batcher.batches_run, batcher.items_run) == (1, 5)
    batcher.close()


def test_it_waits_at_most_max_wait_for_company() -> None:
    batcher = DynamicBatcher(lambda items: items, cost=lambda item: 1, max_batch_size=8, max_wait_ms=50)
    started = time.monotonic()
    assert batcher.submit(1).result(timeout=5) == 1
    assert 0.04 <= time.monotonic() - started < 1.0
    batcher.close()


def test_it_runs_at_once_when_the_batch_is_full() -> None:
    batcher = DynamicBatcher(lambda items: items, cost=lambda item: 1, max_batch_size=3, max_wait_ms=60_000)
    started = time.monotonic()
    futures = [batcher.submit(i) for i in range(3)]
    assert [f.result(timeout=5) for f in futures] == [0, 1, 2]
    assert time.monotonic() - started < 5
    batcher.close()


def test_it_caps_batches_by_padded_cost_in_arrival_order() -> None:
    gate = threading.Event()
    calls: list[list[int]] = []

    def run(items: list[int]) -> list[int]:
        calls.append(list(items))
        gate.wait(5)
        return items

    batcher = DynamicBatcher(run, cost=lambda item: item, max_batch_size=8, max_batch_cost=40, max_wait_ms=1)
    first = batcher.submit(1)
    _wait_for(lambda: len(calls) == 1)  # the worker is busy with [1]; the rest queue up
    futures = [batcher.submit(cost) for cost in (10, 10, 40, 10, 50)]
    gate.set()
    assert first.result(timeout=5) == 1
    assert [f.result(timeout=5) for f in futures] == [10, 10, 40, 10, 50]
    # [10, 10] costs 2 x 10; adding 40 would cost 3 x 40. An item over the cap still runs, alone.
    assert calls == [[1], [10, 10], [40], [10], [50]]
    batcher.close()


def test_it_fails_every_item_of_a_failed_batch() -> None:
    def run(items: list[int]) -> list[int]:
        raise RuntimeError("device lost")

    batcher = DynamicBatcher(run, cost=lambda item: 1, max_batch_size=4, max_wait_ms=100)
    futures = [batcher.submit(i) for i in range(3)]
    for future in futures:
        with pytest.raises(RuntimeError, match="device lost"):
            future.result(timeout=5)
    batcher.close()


def test_it_drops_items_cancelled_before_they_run() -> None:
    gate = threading.Event()
    calls: list[list[str]] = []

    def run(items: list[str]) -> list[str]:
        calls.append(list(items))
        gate.wait(5)
        return items

    batcher = DynamicBatcher(run, cost=lambda item: 1, max_batch_size=8, max_wait_ms=1)
    batcher.submit("busy")
    _wait_for(lambda: len(calls) == 1)
    kept, dropped = batcher.submit("kept"), batcher.submit("dropped")
    assert dropped.cancel()
    gate.set()
    assert kept.result(timeout=5) == "kept"
    assert calls == [["busy"], ["kept"]]
    batcher.close()


def test_it_fails_queued_items_and_new_submissions_once_closed() -> None:
    gate = threading.Event()
    batcher = DynamicBatcher(lambda items: gate.wait(5) and items, cost=lambda item: 1, max_batch_size=1, max_wait_ms=1)
    running = batcher.submit(1)
    _wait_for(running.running)
    queued = batcher.submit(2)
    closer = threading.Thread(target=batcher.close)
    closer.start()
    with pytest.raises(BatcherClosed):
        queued.result(timeout=5)
    gate.set()
    closer.join(5)
    assert running.result(timeout=5) == 1  # the batch in progress completes
    with pytest.raises(BatcherClosed):
        batcher.submit(3)
