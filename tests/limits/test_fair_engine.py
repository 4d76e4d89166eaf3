"""Engine time per tenant in turn (tts/synthesis/engine_time/scheduler.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from tts.inference.engine_share import EngineShare
from tts.synthesis.engine_time.scheduler import FairScheduler


def test_it_serves_a_quiet_tenant_before_a_busy_tenants_queue() -> None:
    scheduler = FairScheduler(1, share=EngineShare(), name="tts-test-fair")
    order: list[str] = []
    gate = threading.Event()

    def task(name: str) -> str:
        if name == "a0":
            gate.wait(10)  # hold the only worker until everything is queued
        order.append(name)
        return name

    futures = [scheduler.submit("A", task, f"a{i}") for i in range(8)]
    time.sleep(0.1)
    quiet = scheduler.submit("B", task, "b0")
    gate.set()
    assert quiet.result(10) == "b0"
    for future in futures:
        future.result(10)
    # B waited for the task that was running, not for A's queue.
    assert order.index("b0") == 1
    assert order[:1] + order[2:] == [f"a{i}" for i in range(8)]  # A's own order is kept


def test_it_alternates_between_busy_tenants_and_skips_cancelled_work() -> None:
    scheduler = FairScheduler(1, share=EngineShare(), name="tts-test-rr")
    order: list[str] = []
    gate = threading.Event()
    first = scheduler.submit("A", lambda: gate.wait(10))
    time.sleep(0.05)
    a = [scheduler.submit("A", order.append, f"a{i}") for i in range(3)]
    b = [scheduler.submit("B", order.append, f"b{i}") for i in range(3)]
    assert a[1].cancel()  # a stream that went away: never run
    gate.set()
    first.result(10)
    for future in [a[0], a[2], *b]:
        future.result(10)
    # B had not had a turn: it goes first, then the two alternate; the cancelled task costs A no turn.
    assert order == ["b0", "a0", "b1", "a2", "b2"]


def test_it_runs_window_by_window_in_turn_and_passes_errors() -> None:
    scheduler = FairScheduler(2, share=EngineShare(), name="tts-test-iter")
    assert list(scheduler.iterate("A", iter([1, 2, 3]))) == [1, 2, 3]
    future = scheduler.submit("A", lambda: 1 / 0)
    try:
        future.result(10)
    except ZeroDivisionError:
        pass
    else:
        raise AssertionError("the task's exception must reach the caller")


def test_it_keeps_serving_after_many_tenants_came_and_went() -> None:
    """Idle tenants' times are forgotten past a bound; the tenant being served must never be."""
    scheduler = FairScheduler(1, share=EngineShare(), name="tts-test-many")
    for tenant in range(300):  # one task each: every turn empties its tenant's queue
        assert scheduler.submit(tenant, lambda t=tenant: t).result(10) == tenant
    assert scheduler.run("last", lambda: "served") == "served"


def test_inline_steps_hold_no_worker_and_queue_under_the_tenant() -> None:
    from tts.inference.work_pool import WorkPool, work_key

    scheduler = FairScheduler(1, share=EngineShare(), name="tts-test-inline")
    pool = WorkPool(1, name="tts-test-inline-pool")
    release = threading.Event()
    keys: list[object] = []

    def windows() -> Iterator[int]:
        # What an engine with its own fair pool does inside a step: queue under the caller's key, wait.
        for i in range(3):
            keys.append(_current_key())  # what pool.submit queues the run under
            yield pool.submit(lambda i=i: (release.wait(10), i)[1]).result(10)

    try:
        streams = [scheduler.iterate(f"A{n}", windows(), inline=True) for n in range(4)]
        readers = [threading.Thread(target=list, args=(stream,)) for stream in streams]
        for reader in readers:
            reader.start()
        time.sleep(0.1)
        # Four streams wait for their windows, yet the scheduler's only worker is free for tenant B.
        assert scheduler.submit("B", lambda: "b").result(2) == "b"
        release.set()
        for reader in readers:
            reader.join(10)
        assert sorted(set(map(str, keys))) == ["A0", "A1", "A2", "A3"]
        with work_key("C"):  # the caller's own key is left as it was
            assert _current_key() == "C"
    finally:
        release.set()
        pool.close()


def _current_key() -> object:
    from tts.inference.work_pool import _current_key as key

    return key.get()
