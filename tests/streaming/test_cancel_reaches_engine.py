"""A client that goes away stops its engine work (SynthesisRun.stop, tts/inference/work_pool.py): what
it queued in the engine scheduler, an engine's pool or the batcher is dropped unrun, no further
sentence starts, and on a real daphne the streams of clients that hung up start no engine task
after the hang-up (Kokoro, whole sentences: the case that kept a core busy for 30 s)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from concurrent.futures import CancelledError, ThreadPoolExecutor

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from accounts.models import Usage
from tests.fixtures import TenantCtx
from tts.inference.batcher import DynamicBatcher
from tts.inference.work_pool import CancelSignal, WorkCancelled, WorkPool, raise_if_cancelled, work_key
from tts.models import SynthesisRecord, Voice
from tts.synthesis.engine_time.scheduler import FairScheduler
from tts.synthesis.live.streaming import ThreadedStream

# --- the rule, unit by unit ----------------------------------------------------------------


def test_setting_the_signal_drops_the_queued_tasks_and_the_work_they_queued() -> None:
    scheduler = FairScheduler(1, name="tts-test-cancel")
    pool = WorkPool(1, name="tts-test-cancel-pool")
    gate, ran = threading.Event(), []
    signal = CancelSignal()

    def segment(name: str) -> str:
        if name == "s0":
            # Inside a task: the window it queues in the engine's pool belongs to the same client.
            window = pool.submit(lambda: ran.append("window"))
            gate.wait(10)
            try:
                window.result(10)
            except CancelledError:
                ran.append("window dropped")
            raise_if_cancelled()  # the next sentence of this segment never starts
            ran.append("next sentence")
        ran.append(name)
        return name

    busy = threading.Event()

    def block() -> None:
        busy.set()
        gate.wait(10)

    blocker = pool.submit(block)  # the pool's only worker is busy: the window waits
    # Running before any window is queued: a worker that started late would pick the least-used
    # key first, the window's, and run it before the blocker.
    assert busy.wait(10)
    first = scheduler.submit("A", segment, "s0", cancel=signal)
    ahead = [scheduler.submit("A", segment, f"s{i}", cancel=signal) for i in (1, 2)]
    other = scheduler.submit("B", segment, "b0")
    time.sleep(0.2)
    dropped_before = scheduler.tasks_dropped
    signal.set()  # the client went away
    assert all(f.cancelled() for f in ahead)
    gate.set()
    with pytest.raises(WorkCancelled):
        first.result(10)
    assert other.result(10) == "b0"  # another client's work is untouched
    blocker.result(10)
    assert ran == ["window dropped", "b0"]
    assert scheduler.tasks_dropped - dropped_before == 2
    # Work queued under a signal that is already set never runs.
    with pytest.raises(WorkCancelled):
        scheduler.run("A", ran.append, "late", cancel=signal)
    with pytest.raises(WorkCancelled):
        list(scheduler.iterate("A", iter([1, 2]), cancel=signal))
    with work_key("A", cancel=signal):
        assert pool.submit(lambda: ran.append("late")).cancelled()
    assert "late" not in ran
    pool.close()
    scheduler.shutdown()


def test_the_batcher_drops_what_a_gone_client_queued() -> None:
    gate = threading.Event()
    batcher: DynamicBatcher[int, int] = DynamicBatcher(
        lambda items: [i for i in items if gate.wait(10)], cost=lambda _: 1, max_batch_size=1, name="tts-test-batcher"
    )
    signal = CancelSignal()
    running = batcher.submit(0)
    time.sleep(0.1)
    with work_key("A", cancel=signal):
        queued = batcher.submit(1)
    signal.set()
    gate.set()
    assert queued.cancelled() and running.result(10) == 0
    batcher.close()


def test_closing_a_stream_sets_its_stop_at_once_even_while_its_thread_is_busy() -> None:
    signal, release = CancelSignal(), threading.Event()

    def items():  # type: ignore[no-untyped-def]
        yield 1
        release.wait(10)  # the prefetch: the stream's thread is inside the engine
        yield 2

    async def consume() -> None:
        stream = ThreadedStream(items, stop=signal.set, name="tts-test-stop")
        assert await stream.__anext__() == 1
        stream.close()  # from the event loop: never waits for the thread
        assert signal.is_set()
        release.set()
        stream.finished.wait(10)

    asyncio.run(consume())


# --- on a real daphne ---------------------------------------------------------------------

STREAMS = 4
SENTENCE = "今日は晴れです。"


def _tasks(url: str) -> dict[tuple[str, str], float]:
    text = httpx.get(f"{url}/metrics", timeout=30).text
    return {
        (s.labels["queue"], s.labels["outcome"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name == "tts_engine_tasks"
        for s in family.samples
        if s.name == "tts_engine_tasks_total"
    }


def _open_stream(url: str, key: str, text: str) -> tuple[socket.socket, str]:
    """A raw connection with a stream requested and its first audio read; the record's id."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({"text": text}).encode()
    sock = socket.create_connection((host, int(port)), timeout=120)
    sock.sendall(
        f"POST /v1/text-to-speech/jf_alpha/stream?output_format=pcm_24000 HTTP/1.1\r\nHost: {host}\r\n"
        f"xi-api-key: {key}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:300]
    while len(rest) < 2000:  # some audio, not just the chunk header
        rest += sock.recv(65536)
    headers = {k.lower(): v for k, v in (line.split(b": ", 1) for line in head.split(b"\r\n")[1:])}
    return sock, headers[b"history-item-id"].decode()


@pytest.mark.django_db(transaction=True)
@pytest.mark.server
@pytest.mark.slow
def test_clients_that_hang_up_start_no_more_engine_work(
    live_server_url: str, tenant_a: TenantCtx, kokoro: Voice
) -> None:
    plan = tenant_a.tenant.plan
    plan.max_concurrent_streams = STREAMS
    plan.save()
    text = SENTENCE * 30  # thirty short sentences, each one engine task (whole-sentence Kokoro)
    warm = httpx.post(  # the engine loaded and warm first
        f"{live_server_url}/v1/text-to-speech/jf_alpha?output_format=pcm_24000",
        json={"text": SENTENCE},
        headers={"xi-api-key": tenant_a.key},
        timeout=300,
    )
    assert warm.status_code == 200
    billed_before = Usage.objects.get(tenant=tenant_a.tenant).characters
    # Opened side by side: one after another, each stream's look-ahead ran while the next waited
    # for its first audio (13 s of Kokoro before the hang-up).
    with ThreadPoolExecutor(STREAMS) as pool:
        streams = list(pool.map(lambda _: _open_stream(live_server_url, tenant_a.key, text), range(STREAMS)))
    before = _tasks(live_server_url)
    for sock, _ in streams:
        sock.close()
    ids = [record for _, record in streams]
    deadline = time.monotonic() + 120
    while SynthesisRecord.objects.filter(pk__in=ids, status="pending").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # a task still running at the hang-up ends; a queued one would start now
    after = _tasks(live_server_url)
    started = after[("scheduler", "run")] - before[("scheduler", "run")]
    dropped = after[("scheduler", "dropped")] - before[("scheduler", "dropped")]
    # Each stream had its next sentences queued (look-ahead and the prefetch): dropped, never run.
    # Only a task that was already running may finish, and what started in the instant between the
    # hang-up and daphne seeing it: at most one per engine worker. Before the stop signal every
    # stream's next sentence ran to completion first (4 or more here).
    workers = os.cpu_count() or 1  # the server's engine scheduler has one worker per core
    assert started <= workers, (started, dropped)
    assert dropped >= STREAMS
    records = list(SynthesisRecord.objects.filter(pk__in=ids))
    assert {r.status for r in records} == {"cancelled"}
    # Billed: what went out, not the thirty sentences each.
    billed = Usage.objects.get(tenant=tenant_a.tenant).characters - billed_before
    assert 0 < billed == sum(r.characters for r in records) < STREAMS * len(text) // 4
