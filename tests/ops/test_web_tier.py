"""The production web tier (``python -m ttsplatform.serve``, ``make serve``): several
daphne processes on one port, each serving HTTP and WebSockets with its own
model lifecycle."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests import servers
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.servers import ROOT, free_port, wait_http
from tts.models import SynthesisRecord, Voice

pytestmark = pytest.mark.django_db(transaction=True)


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def served_by(pids: list[int], port: int) -> dict[int, int]:
    """Client port -> the pid holding the server side of that established connection on ``port``."""
    inode_pid: dict[str, int] = {}
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inode_pid[target[8:-1]] = pid
    result = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == "01" and fields[9] in inode_pid:
                result[remote_port] = inode_pid[fields[9]]
    return result


@pytest.fixture
def web_tier(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    port = free_port()
    env = dict(os.environ, DATABASE_URL=servers.test_database_url(), PYTHONUNBUFFERED="1")
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ttsplatform.serve", "--host", "127.0.0.1", "--port", str(port), "--processes", "2"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=120, proc=proc)
        yield proc, port, log_path
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_two_processes_share_the_port_and_both_serve(
    web_tier: tuple[subprocess.Popen[bytes], int, Path], tenant_a: TenantCtx, joe: Voice
) -> None:
    proc, port, log_path = web_tier
    deadline = time.monotonic() + 60
    while len(workers := children_of(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(workers) == 2, log_path.read_text()

    # A burst of keep-alive connections opened at once (a load balancer's pool, wrk) is spread over
    # both processes: each has its own socket (SO_REUSEPORT). On one shared socket the first process
    # to wake accepted them all (16 connections: all on one socket by chance once in 32,768 runs).
    burst = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(16)]
    for sock in burst:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    for sock in burst:
        assert sock.recv(64).startswith(b"HTTP/1.1 200"), "no answer"
    holders = served_by(workers, port)
    assert {holders.get(sock.getsockname()[1]) for sock in burst} == set(workers), holders
    for sock in burst:
        sock.close()

    # HTTP: keep-alive connections until each process holds one; every process answers
    # its probes (its lifecycle thread runs) and synthesizes.
    http_by_pid: dict[int, http.client.HTTPConnection] = {}
    opened = []
    for _ in range(40):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request("GET", "/healthz")
        assert conn.getresponse().read() is not None
        opened.append(conn)
        pid = served_by(workers, port).get(conn.sock.getsockname()[1])
        if pid is not None:
            http_by_pid.setdefault(pid, conn)
        if len(http_by_pid) == 2:
            break
    assert set(http_by_pid) == set(workers)
    for conn in http_by_pid.values():
        conn.request("GET", "/readyz")
        ready = conn.getresponse()
        assert ready.status == 200, ready.read()
        ready.read()
        conn.request(
            "POST",
            "/v1/text-to-speech/joe?output_format=pcm_16000",
            body=json.dumps({"text": "Hello from one of the web processes."}),
            headers={"xi-api-key": tenant_a.key, "Content-Type": "application/json"},
        )
        response = conn.getresponse()
        audio = response.read()
        assert response.status == 200, audio[:300]
        samples, rate = decode_audio(audio, "pcm_16000")
        assert_speech(samples, rate, expected_rate=16000, text="Hello from one of the web processes.")
    for conn in opened:
        conn.close()

    # WebSockets: connections until each process holds one; each speaks an utterance.
    url = f"ws://127.0.0.1:{port}/v1/text-to-speech/joe/stream-input?output_format=pcm_16000"
    ws_by_pid: dict[int, ClientConnection] = {}
    with contextlib.ExitStack() as sockets:
        for _ in range(40):
            ws = sockets.enter_context(connect(url, additional_headers={"xi-api-key": tenant_a.key}, open_timeout=60))
            pid = served_by(workers, port).get(ws.local_address[1])
            if pid is not None:
                ws_by_pid.setdefault(pid, ws)
            if len(ws_by_pid) == 2:
                break
        assert set(ws_by_pid) == set(workers)
        for ws in ws_by_pid.values():
            ws.send(json.dumps({"text": " "}))
            ws.send(json.dumps({"text": "A socket on each process. ", "flush": True}))
            ws.send(json.dumps({"text": ""}))
            audio = bytearray()
            final = None
            try:
                while True:
                    message = json.loads(ws.recv(timeout=120))
                    if message.get("audio"):
                        audio += base64.b64decode(message["audio"])
                    final = message
            except ConnectionClosed:
                pass
            assert final == {"isFinal": True}
            samples, rate = decode_audio(bytes(audio), "pcm_16000")
            assert_speech(samples, rate, expected_rate=16000, text="A socket on each process.")
    assert SynthesisRecord.objects.filter(status="success").count() == 4

    # A process that dies is replaced; the port keeps serving.
    os.kill(workers[0], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = children_of(proc.pid)
        if len(now) == 2 and workers[0] not in now:
            break
        time.sleep(0.2)
    assert len(children_of(proc.pid)) == 2 and workers[0] not in children_of(proc.pid)
    wait_http(f"http://127.0.0.1:{port}/healthz", timeout=60)
    assert proc.poll() is None
