"""The engine's work pool serves keys (tenants) in turn, priorities only within a key: windows
one tenant's stream already queued do not run ahead of another tenant's next one."""

from __future__ import annotations

import threading

from tts.inference.engine_share import EngineShare
from tts.inference.work_pool import WorkPool, work_key

FIRST, LATER = 0, 1


def run_order(submissions: list[tuple[str, int]]) -> list[str]:
    """Queue ``(name, priority)`` tasks behind a running one on a one-worker pool; the order they ran in."""
    pool = WorkPool(1, name="test-pool", share=EngineShare())
    release = threading.Event()
    order: list[str] = []
    try:
        blocker = pool.submit(release.wait)
        futures = []
        for name, priority in submissions:
            with work_key(name[0]):  # the tenant is the name's first letter, as the engine scheduler sets it
                futures.append(pool.submit(lambda name=name: order.append(name), priority=priority))
        release.set()
        blocker.result(timeout=5)
        for future in futures:
            future.result(timeout=5)
    finally:
        pool.close()
    return order


def test_a_tenants_queued_windows_do_not_run_ahead_of_anothers() -> None:
    a_windows = [(f"a{i}", LATER) for i in range(6)]
    order = run_order([*a_windows, ("b0", LATER), ("b1", LATER)])
    # Before: a0..a5, then b0, b1. In turn: b's first window is next after one of a's.
    assert order == ["a0", "b0", "a1", "b1", "a2", "a3", "a4", "a5"]


def test_priority_comes_first_within_a_tenants_share_and_one_tenant_keeps_its_order() -> None:
    order = run_order([("a0", LATER), ("a1", LATER), ("b0", LATER), ("a2", FIRST), ("b1", FIRST)])
    # Tenants in turn (a arrived first); within each, FIRST before LATER. a's urgent window
    # does not push b's work back by more than its own turn.
    assert order == ["a2", "b1", "a0", "b0", "a1"]
    assert run_order([(f"a{i}", LATER) for i in range(5)]) == [f"a{i}" for i in range(5)]


def test_its_workers_run_below_the_process_on_linux() -> None:
    import os
    import sys

    import pytest

    if not sys.platform.startswith("linux"):
        pytest.skip("the nice value is per thread on Linux only")

    def own_nice() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    base = own_nice()
    for increment, expected in ((10, min(19, base + 10)), (0, base)):
        pool = WorkPool(2, name="test-nice", nice=increment)
        try:
            assert [pool.submit(own_nice).result(timeout=5) for _ in range(4)] == [expected] * 4
        finally:
            pool.close()
    assert own_nice() == base  # the caller's thread is left as it was


def test_idle_for_a_priority_counts_workers_busy_with_later_work_as_free() -> None:
    pool = WorkPool(2, name="test-idle")
    release = threading.Event()
    try:
        assert pool.idle() == pool.idle(FIRST) == 2
        later = [pool.submit(release.wait, priority=LATER) for _ in range(3)]  # both workers, one queued
        deadline = threading.Event()
        while pool.idle() and not deadline.wait(0.01):
            pass
        assert pool.idle() == 0
        # A FIRST task would be taken next by either worker: both are free for it.
        assert pool.idle(FIRST) == 2 and pool.idle(LATER) == 0
        first = pool.submit(release.wait, priority=FIRST)
        assert pool.idle(FIRST) == 1
        release.set()
        for future in [*later, first]:
            future.result(timeout=5)
        assert pool.idle(FIRST) == pool.idle() == 2
    finally:
        release.set()
        pool.close()
