"""The scheduler's rule (tts/synthesis/engine_time/scheduler.py): engine-seconds are shared, not
requests; stream priority stays within a tenant's share; no tenant holds every worker;
a dearer tenant's runs in progress yield the CPU.

Fast, no HTTP: the tasks burn real CPU on the scheduler's and the pool's own threads,
and the shares are the CPU seconds those threads measured.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import pytest

from tts.inference.engine_share import EngineShare
from tts.inference.work_pool import WorkPool
from tts.synthesis.engine_time.scheduler import FairScheduler

#: The largest ratio between two busy tenants' engine-seconds the rule allows here
#: (one Kokoro-sized task is 8 % of either's time in the window measured).
TOLERANCE = 1.25


def _burner(spent: dict[str, float], lock: threading.Lock, name: str, seconds: float) -> Callable[[], None]:
    def burn() -> None:
        start = time.thread_time()
        while time.thread_time() - start < seconds:
            pass
        with lock:
            spent[name] += time.thread_time() - start

    return burn


def test_it_shares_engine_seconds_not_requests_between_kokoro_and_piper_sized_work() -> None:
    share = EngineShare()
    scheduler = FairScheduler(1, share=share, name="tts-test-share")
    spent: dict[str, float] = defaultdict(float)
    lock = threading.Lock()
    # A: Kokoro-sized runs (12x a Piper one, as their cost per second of audio); B: Piper-sized.
    kokoro, piper = _burner(spent, lock, "A", 0.024), _burner(spent, lock, "B", 0.002)
    runs: dict[str, int] = defaultdict(int)

    def counted(name: str, fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            fn()
            with lock:
                runs[name] += 1

        return run

    for _ in range(400):
        scheduler.submit("A", counted("A", kokoro), engine_seconds=0.024)
    for _ in range(4000):
        scheduler.submit("B", counted("B", piper), engine_seconds=0.002)
    deadline = time.monotonic() + 30
    while min(spent["A"], spent["B"]) < 0.6 and time.monotonic() < deadline:
        time.sleep(0.05)
    scheduler.shutdown()
    with lock:
        a, b = spent["A"], spent["B"]
        a_runs, b_runs = runs["A"], runs["B"]
    assert min(a, b) >= 0.3, (a, b)
    assert 1 / TOLERANCE <= a / b <= TOLERANCE, f"A {a:.3f} s in {a_runs} runs, B {b:.3f} s in {b_runs} runs"
    # Shared by requests, A would have had twelve times B's engine time; here B ran about 12x A's runs.
    assert b_runs >= 8 * a_runs, (a_runs, b_runs)


def test_one_tenants_stream_priority_does_not_starve_anothers_whole_file_work() -> None:
    late, whole = 0, 1  # tts.inference.pacing: LATE windows before WHOLE ones
    share = EngineShare()
    pool = WorkPool(1, name="test-starve", share=share)
    spent: dict[str, float] = defaultdict(float)
    lock = threading.Lock()
    stop = threading.Event()

    def flood() -> None:  # tenant A's streams: always four late windows queued
        pending = []
        while not stop.is_set():
            pending = [f for f in pending if not f.done()]
            while len(pending) < 4:
                pending.append(pool.submit(_burner(spent, lock, "A", 0.005), priority=late, key="A"))
            time.sleep(0.001)

    feeder = threading.Thread(target=flood, daemon=True)
    feeder.start()
    try:
        time.sleep(0.1)  # A's flood is under way
        started = time.monotonic()
        futures = [pool.submit(_burner(spent, lock, "B", 0.005), priority=whole, key="B") for _ in range(20)]
        for future in futures:
            future.result(timeout=10)  # before: A's late windows always came first, and B never ran
        elapsed = time.monotonic() - started
        with lock:
            b_share = spent["B"] / (spent["A"] + spent["B"])
    finally:
        stop.set()
        feeder.join(5)
        pool.close()
    # B's 100 ms of work took about twice that beside A (its half of the one worker), not A's whole flood.
    assert elapsed < 2.0, elapsed
    assert b_share > 0.25, b_share


def test_a_tenant_at_its_share_of_workers_leaves_one_for_another() -> None:
    scheduler = FairScheduler(3, per_tenant=2, share=EngineShare(), name="tts-test-cap")
    release = threading.Event()
    a = [scheduler.submit("A", release.wait, 10) for _ in range(6)]  # long Kokoro sentences
    time.sleep(0.05)
    started = time.monotonic()
    assert scheduler.run("B", lambda: "b") == "b"  # did not wait for any of A's
    assert time.monotonic() - started < 1.0
    release.set()
    for future in a:
        assert future.result(10) is True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")
def test_a_cheaper_tenants_run_demotes_a_dearer_ones_in_progress() -> None:
    share = EngineShare(margin_s=0.01)
    share.charge("A", 5.0)  # A has had five engine-seconds lately, B none
    entered, release = threading.Event(), threading.Event()
    seen: dict[str, int] = {}
    tid: list[int] = []

    def a_run() -> None:
        tid.append(threading.get_native_id())
        seen["before"] = os.getpriority(os.PRIO_PROCESS, tid[0])
        with share.running("A") as outcome:
            entered.set()
            release.wait(10)
            seen["during"] = os.getpriority(os.PRIO_PROCESS, tid[0])
        seen["after"] = os.getpriority(os.PRIO_PROCESS, tid[0])
        seen["retire"] = int(outcome.retire)

    thread = threading.Thread(target=a_run)
    thread.start()
    entered.wait(10)
    with share.running("B"):
        pass
    release.set()
    thread.join(10)
    assert seen["during"] == 19
    assert share.demotions == 1
    # Raised back at its run's end where the process may, else the thread is told to retire.
    assert seen["after"] == seen["before"] or (seen["retire"] and share.retired == 1)


def test_usage_decays_and_merges_the_hosts_other_processes() -> None:
    share = EngineShare(half_life_s=0.2)
    share.charge("A", 1.0)
    share.merge_remote({"B": 0.5}, running=set())
    assert share.least_used(["A", "B"]) == "B"
    time.sleep(0.4)  # two half-lives: A's own 1.0 is down to about 0.25, B's remote 0.5 stays as published
    assert share.usage("A") == pytest.approx(0.25, abs=0.05)
    assert share.least_used(["B", "A"]) == "A"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")
def test_a_dearer_tenants_run_that_starts_while_a_cheaper_one_runs_starts_demoted() -> None:
    share = EngineShare(margin_s=0.01)
    share.charge("A", 5.0)
    seen: dict[str, int] = {}

    def a_run() -> None:
        with share.running("A"):
            seen["during"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    with share.running("B"):
        thread = threading.Thread(target=a_run)
        thread.start()
        thread.join(10)
    assert seen["during"] == 19
    # Alone, A's run is not lowered.
    thread = threading.Thread(target=a_run)
    thread.start()
    thread.join(10)
    assert seen["during"] < 19
