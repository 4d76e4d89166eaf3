"""A demotion never sticks, with or without CAP_SYS_NICE (#41 item 1).

A dearer tenant's run is lowered to nice 19 while a cheaper one runs. Where the process may not
raise a thread's priority again (the shipped containers have no CAP_SYS_NICE) that worker retires
and a fresh one takes its place: started from a spawner that is never demoted and set to an
absolute nice (``tts.inference.thread_nice``), so the next tenant's run is at the pools' nice, not
19. Each case runs in a process of its own, once with the capability and once without it
(``setpriv``), and reads the nice of the thread that ran the next tenant's work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.servers import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")

SCRIPT = r"""
import json, os, threading
import django
django.setup()
from tts.inference.engine_share import EngineShare
from tts.inference.work_pool import WorkPool
from tts.synthesis.engine_time.scheduler import FairScheduler

def nice():
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

def case(make_runner, submit):
    share = EngineShare(margin_s=0.01)
    runner = make_runner(share)
    share.charge("dear", 5.0)
    entered, release = threading.Event(), threading.Event()
    seen = {}

    def dear():
        entered.set()
        release.wait(10)
        seen["dear_during"] = nice()

    first = submit(runner, "dear", dear)
    entered.wait(10)
    with share.running("cheap"):  # demotes the dear run in progress
        release.set()
        first.result(10)
    seen["fresh"] = submit(runner, "fresh", nice).result(10)
    seen["again"] = submit(runner, "fresh", nice).result(10)
    seen["retired"] = share.retired
    return seen

pool = case(lambda share: WorkPool(1, nice=10, share=share, name="t-pool"),
            lambda pool, key, fn: pool.submit(fn, key=key))
import tts.inference.work_pool as wp
wp.worker_nice = 10
scheduler = case(lambda share: FairScheduler(1, share=share, name="t-sched"),
                 lambda s, key, fn: s.submit(key, fn))
print(json.dumps({"pool": pool, "scheduler": scheduler, "base": os.getpriority(os.PRIO_PROCESS, os.getpid())}))
"""


def run_case(*, drop_sys_nice: bool) -> dict:
    command = [sys.executable, "-c", SCRIPT]
    if drop_sys_nice:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to run without CAP_SYS_NICE"
        command = [setpriv, "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", *command]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("drop_sys_nice", [False, True], ids=["with CAP_SYS_NICE", "without CAP_SYS_NICE"])
def test_the_next_tenant_runs_at_the_pools_nice_after_a_demotion(drop_sys_nice: bool) -> None:
    seen = run_case(drop_sys_nice=drop_sys_nice)
    target = min(19, seen["base"] + 10)
    for runner in ("pool", "scheduler"):
        case = seen[runner]
        assert case["dear_during"] == 19, (runner, case)  # the demotion happened
        assert case["fresh"] == case["again"] == target, (runner, case)  # and did not stick
        if drop_sys_nice:
            assert case["retired"] == 1, (runner, case)  # could not be raised back: replaced
