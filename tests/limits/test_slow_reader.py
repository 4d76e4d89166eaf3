"""On a real daphne: a client that stops reading cannot make the server buffer a whole
synthesis. Past ``TTS_STREAM_MAX_UNSENT_BYTES`` waiting in the connection's transport the
stream pauses (synthesis with it); a client that reads again gets the whole stream, one
that stays stalled for ``TTS_STREAM_SEND_TIMEOUT_S`` is cut off, its run cancelled and
the unspoken characters refunded. The same for a WebSocket."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from accounts.models import Usage
from tests.fixtures import TenantCtx
from tests.jobs.conftest import long_text
from tests.servers import ServerProc
from tts.models import SynthesisRecord, Voice

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.server, pytest.mark.slow]

MAX_UNSENT = 256 * 1024
TEXT = long_text(900)  # about 60 s of audio, 5.8 MB at 48 kHz: 22 times the bound
FORMAT = "pcm_48000"  # 96,000 bytes a second of audio: a big stream from little text


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def small_window_socket(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: the window stays small
    sock.connect((host, int(port)))
    return sock


def stalled_stream(url: str, ctx: TenantCtx, text: str) -> socket.socket:
    """Opens a stream on a socket with a 4 KiB receive buffer and reads nothing."""
    sock = small_window_socket(url)
    body = json.dumps({"text": text}).encode()
    sock.sendall(
        (
            f"POST /v1/text-to-speech/joe/stream?output_format={FORMAT} HTTP/1.1\r\n"
            "Host: 127.0.0.1\r\nConnection: close\r\n"
            f"xi-api-key: {ctx.key}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        + body
    )
    return sock


def ws_frame(payload: dict) -> bytes:
    """A masked client text frame."""
    data = json.dumps(payload).encode()
    mask = os.urandom(4)
    size = len(data)
    head = bytes([0x81, 0x80 | size]) if size < 126 else bytes([0x81, 0x80 | 126]) + struct.pack(">H", size)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def stalled_websocket(url: str, ctx: TenantCtx, text: str) -> socket.socket:
    """A stream-input utterance (binary audio) on a 4 KiB receive window: reads the handshake, then nothing."""
    sock = small_window_socket(url)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /v1/text-to-speech/joe/stream-input?output_format={FORMAT}&binary_audio=true"
            "&inactivity_timeout=180 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nxi-api-key: {ctx.key}\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    sock.sendall(ws_frame({"text": " "}) + ws_frame({"text": text + " ", "flush": True}) + ws_frame({"text": ""}))
    return sock


def read_all(sock: socket.socket) -> bytes:
    sock.settimeout(120)
    data = b""
    while piece := sock.recv(65536):
        data += piece
    return data


def record(ctx: TenantCtx) -> SynthesisRecord | None:
    return SynthesisRecord.objects.filter(tenant=ctx.tenant, text__startswith=TEXT[:100]).first()


def warm_rss(server: ServerProc, ctx: TenantCtx) -> int:
    """The server's RSS (KiB) after one short stream read to its end (the model loaded)."""
    read_all(stalled_stream(server.url, ctx, "Warm up, please."))
    return rss_kib(server.proc.pid)


def watch(server: ServerProc, ctx: TenantCtx, seconds: float) -> tuple[int, SynthesisRecord | None]:
    """Peak RSS (KiB) of the server while the stalled stream sits there, and its record then."""
    peak = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        peak = max(peak, rss_kib(server.proc.pid))
        row = record(ctx)
        if row is not None and row.status != "pending":
            break
        time.sleep(0.25)
    return peak, record(ctx)


def spent(ctx: TenantCtx) -> int:
    row = Usage.objects.filter(tenant=ctx.tenant).first()
    return row.characters if row else 0


def kernel_queued(sock: socket.socket) -> int:
    """Bytes of this connection in the kernels' buffers: the server's send queue and our receive queue."""
    port = sock.getsockname()[1]
    out = subprocess.run(["ss", "-tnH", "state", "established"], capture_output=True, text=True).stdout
    total = 0
    for line in out.splitlines():
        recv_q, send_q, local, peer = line.split()[:4]
        if local.endswith(f":{port}") or peer.endswith(f":{port}"):
            total += int(recv_q) + int(send_q)
    return total


def wait_paused(server: ServerProc, ctx: TenantCtx, timeout: float = 120) -> int:
    """Wait until the server spends (almost) no CPU for 3 s while the record is still pending:
    the stream is paused, synthesis with it. Returns the server's RSS (KiB) then."""
    deadline = time.monotonic() + timeout
    pid = server.proc.pid
    while time.monotonic() < deadline:
        before = cpu_s(pid)
        time.sleep(3)
        row = record(ctx)
        assert row is None or row.status == "pending", f"finished while nothing was read: {row.status}"
        if row is not None and cpu_s(pid) - before < 0.2:
            return rss_kib(pid)
    raise AssertionError("the server never paused")


@pytest.fixture
def bounded(daphne_factory):  # type: ignore[no-untyped-def]
    def start(timeout_s: int) -> ServerProc:
        env = {"TTS_STREAM_MAX_UNSENT_BYTES": str(MAX_UNSENT), "TTS_STREAM_SEND_TIMEOUT_S": str(timeout_s)}
        return daphne_factory(env)

    return start


def test_without_the_bound_daphne_buffers_the_whole_stream(daphne_factory, tenant_a: TenantCtx, joe: Voice) -> None:  # type: ignore[no-untyped-def]
    """What the bound is for: daphne alone finishes and holds everything while the client reads nothing."""
    server = daphne_factory({"TTS_STREAM_MAX_UNSENT_BYTES": "0"})
    base = warm_rss(server, tenant_a)
    sock = stalled_stream(server.url, tenant_a, TEXT)
    peak, row = watch(server, tenant_a, 240)
    assert row is not None and row.status == "success"  # all of it synthesized, none of it read
    kernel = kernel_queued(sock)
    data = read_all(sock)
    print(
        f"\nno bound: the stream finished unread; RSS {base} -> {peak} KiB; {len(data)} bytes read afterwards, "
        f"{kernel} of them in the kernels' socket buffers, the rest in daphne"
    )
    assert len(data) > row.duration_s * 96_000


def test_a_stalled_stream_pauses_and_completes_once_read(bounded, tenant_a: TenantCtx, joe: Voice) -> None:  # type: ignore[no-untyped-def]
    server = bounded(60)
    base = warm_rss(server, tenant_a)
    sock = stalled_stream(server.url, tenant_a, TEXT)
    paused = wait_paused(server, tenant_a)
    kernel = kernel_queued(sock)
    data = read_all(sock)
    row = record(tenant_a)
    assert row is not None and row.status == "success"
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    print(
        f"\nbound {MAX_UNSENT} B: paused with RSS {base} -> {paused} KiB, {kernel} bytes in the kernels' "
        f"socket buffers; {len(body)} bytes once read"
    )
    # Chunked framing adds a little; the audio is all there.
    assert len(body) >= row.duration_s * 96_000 * 0.99
    assert spent(tenant_a) == len(TEXT) + len("Warm up, please.")


def test_a_stream_stalled_too_long_is_cut_off_and_refunded(bounded, tenant_a: TenantCtx, joe: Voice) -> None:  # type: ignore[no-untyped-def]
    server = bounded(3)
    sock = stalled_stream(server.url, tenant_a, TEXT)
    _, row = watch(server, tenant_a, 120)
    sock.close()
    assert row is not None and row.status == "cancelled", server.log()[-3000:]
    assert 0 < spent(tenant_a) == row.characters < len(TEXT)  # what was never synthesized was refunded
    assert "connection aborted" in server.log()


def test_a_stalled_websocket_is_cut_off_and_refunded(bounded, tenant_a: TenantCtx, joe: Voice) -> None:  # type: ignore[no-untyped-def]
    server = bounded(3)
    sock = stalled_websocket(server.url, tenant_a, TEXT)
    _, row = watch(server, tenant_a, 120)
    sock.close()
    assert row is not None and row.status == "cancelled", server.log()[-3000:]
    assert 0 < spent(tenant_a) == row.characters < len(TEXT)
    assert "connection aborted" in server.log()
