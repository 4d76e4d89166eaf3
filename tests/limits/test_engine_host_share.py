"""The host's engine-seconds ledger across processes (tts/synthesis/engine_time/host_share.py), over real Redis.

A second process stands for a Wyoming server whose tenant floods its engine;
this one for the web process. A run of the quiet tenant here lowers the
flooding run there to nice 19, through Redis, and usage is the host's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from tts.inference.engine_share import EngineShare
from tts.synthesis.engine_time.host_share import exchange

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.redis,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's"),
]

FLOODER = textwrap.dedent(
    """
    import sys, threading, time
    import django
    django.setup()  # tts.synthesis's entry point loads the models
    from tts.inference.engine_share import EngineShare
    from tts.synthesis.engine_time.host_share import _publish_forever

    url, key = sys.argv[1], sys.argv[2]
    share = EngineShare(margin_s=0.01)
    share.charge("W", 5.0)  # the Wyoming tenant has flooded: five engine-seconds lately
    threading.Thread(target=_publish_forever, args=(url, key, 0.02, share), daemon=True).start()

    def burn():
        print(threading.get_native_id(), flush=True)
        end = time.monotonic() + 20
        while time.monotonic() < end:
            with share.running("W"):
                started = time.thread_time()
                while time.thread_time() - started < 0.05:
                    pass

    burn()
    """
)


def _nice(pid: int, tid: int) -> int:
    # Field 19 of /proc/PID/task/TID/stat is the nice value (after the command name in parentheses).
    stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[16])


def test_a_quiet_tenants_run_in_one_process_demotes_a_flooders_run_in_another() -> None:
    import redis

    key = f"tts:engine-share:test-{uuid.uuid4().hex}"
    client = redis.Redis.from_url(settings.REDIS_URL)
    child = subprocess.Popen(
        [sys.executable, "-c", FLOODER, settings.REDIS_URL, key],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    share = EngineShare(margin_s=0.01)
    stop = threading.Event()

    def exchange_loop() -> None:
        while not stop.is_set():
            exchange(client, key, "web", share)
            time.sleep(0.02)

    exchanger = threading.Thread(target=exchange_loop, daemon=True)
    try:
        assert child.stdout is not None
        tid = int(child.stdout.readline())
        exchanger.start()
        deadline = time.monotonic() + 5
        while share.usage("W") < 1.0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert share.usage("W") > 1.0  # the other process's usage is the host's
        before = _nice(child.pid, tid)
        assert before < 19
        lowest = before
        with share.running("B"):  # the web process's quiet tenant runs: the flooder's runs yield
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline and lowest < 19:
                lowest = max(lowest, _nice(child.pid, tid))
                time.sleep(0.01)
        assert lowest == 19
    finally:
        stop.set()
        child.kill()
        child.wait(10)
        client.delete(key)


def test_stale_and_broken_entries_are_dropped_and_ones_own_is_not_merged() -> None:
    import redis

    key = f"tts:engine-share:test-{uuid.uuid4().hex}"
    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        now = time.time()
        client.hset(key, "dead", f'{{"t": {now - 60}, "u": {{"7": 9.0}}, "r": ["7"]}}')
        client.hset(key, "broken", "not json")
        client.hset(key, "alive", f'{{"t": {now}, "u": {{"8": 2.0}}, "r": []}}')
        share = EngineShare()
        share.charge(9, 1.0)
        assert exchange(client, key, "me", share, now=now) == 1
        assert share.usage(8) == pytest.approx(2.0)
        assert share.usage(7) == 0.0
        assert share.usage(9) == pytest.approx(1.0, abs=0.01)  # its own, not counted twice
        assert sorted(client.hkeys(key)) == [b"alive", b"me"]
    finally:
        client.delete(key)


KEY_OF = textwrap.dedent(
    """
    import django
    django.setup()
    from tts.synthesis.engine_time.host_share import host_share_key, process_member
    print(host_share_key(), process_member())
    """
)


def test_containers_of_one_node_share_its_ledger_under_the_key_prefix() -> None:
    """Two processes in UTS namespaces of their own (as two containers: other hostnames) with the node's
    name in TTS_ENGINE_SHARE_HOST publish into one hash, under TTS_REDIS_KEY_PREFIX, as two members (#41
    item 3); without the setting each container has its own."""
    unshare = "/usr/bin/unshare"
    if os.geteuid() != 0 or not os.path.exists(unshare):
        pytest.skip("needs root and unshare(1) to give a process a hostname of its own")

    def key_in(hostname: str, node: str) -> tuple[str, str]:
        env = {**os.environ, "TTS_ENGINE_SHARE_HOST": node, "TTS_REDIS_KEY_PREFIX": "acme"}
        script = f'hostname {hostname} && exec {sys.executable} -c "$KEY_OF"'
        result = subprocess.run(
            [unshare, "--uts", "sh", "-c", script],
            cwd=ROOT,
            env={**env, "KEY_OF": KEY_OF},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        key, member = result.stdout.split()
        return key, member

    web, web_member = key_in("web-7f9c", "node-a")
    wyoming, wyoming_member = key_in("wyoming-2b1d", "node-a")
    assert web == wyoming == "acme:engine-share:node-a"
    assert web_member.startswith("web-7f9c:") and wyoming_member.startswith("wyoming-2b1d:")
    alone, _ = key_in("web-7f9c", "")
    assert alone == "acme:engine-share:web-7f9c"
