"""On a real daphne: an oversized body is refused while it arrives (by Content-Length before a
byte of it is sent, chunked once it passes the limit) and the rest is never read; an unknown
WebSocket path is refused with a message and a close code, not a 500."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest
from websockets.sync.client import connect

from accounts.models import Usage
from tests.fixtures import TenantCtx
from tests.servers import ServerProc
from tts.models import SynthesisRecord, Voice

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.server]

LIMIT = 64 * 1024


@pytest.fixture
def server(daphne_factory) -> ServerProc:  # type: ignore[no-untyped-def]
    return daphne_factory({"TTS_MAX_BODY_BYTES": str(LIMIT)})


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def _read_response(sock: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            piece = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not piece:
            break
        data += piece
    return data


def _nothing_written(ctx: TenantCtx) -> None:
    assert not Usage.objects.filter(tenant=ctx.tenant, characters__gt=0).exists()
    assert not SynthesisRecord.objects.filter(tenant=ctx.tenant).exists()


@pytest.mark.parametrize("with_key", [True, False])
def test_it_answers_413_on_content_length_before_the_body_is_sent(
    server: ServerProc, tenant_a: TenantCtx, joe: Voice, with_key: bool
) -> None:
    sock = _connect(server.url)
    key = f"xi-api-key: {tenant_a.key}\r\n" if with_key else ""
    sock.sendall(
        (
            "POST /v1/text-to-speech/joe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"{key}Content-Length: {1024 * 1024 * 1024}\r\n\r\n"
        ).encode()
    )
    # Not one byte of the gigabyte was sent: the answer comes from the headers alone.
    response = _read_response(sock)
    sock.close()
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), response[:300]
    detail = json.loads(body)["detail"]
    assert detail["status"] == "body_too_large"
    assert str(LIMIT) in detail["message"]
    _nothing_written(tenant_a)


def test_it_stops_reading_a_chunked_body_past_the_limit(server: ServerProc, tenant_a: TenantCtx, joe: Voice) -> None:
    sock = _connect(server.url)
    sock.sendall(
        (
            "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {tenant_a.key}\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode()
    )
    piece = b"a" * 16384
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    sent = 0
    refused_after = None
    started = time.monotonic()
    # Up to 64 MiB; the server hangs up long before.
    for _ in range(4096):
        try:
            sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            refused_after = sent
            break
        sent += len(piece)
        if time.monotonic() - started > 30:
            break
    response = _read_response(sock)
    sock.close()
    if refused_after is None:
        # The kernel's buffers may have taken everything; the answer still says 413.
        refused_after = sent
    assert response.startswith(b"HTTP/1.1 413"), response[:300]
    error = json.loads(response.partition(b"\r\n\r\n")[2])["error"]
    assert error["code"] == "body_too_large"
    assert refused_after < 8 * 1024 * 1024  # measured: about 96 KiB
    _nothing_written(tenant_a)


def test_a_body_under_the_limit_still_works(server: ServerProc, tenant_a: TenantCtx, joe: Voice) -> None:
    response = httpx.post(
        f"{server.url}/v1/text-to-speech/joe?output_format=pcm_16000",
        json={"text": "Still fine."},
        headers={"xi-api-key": tenant_a.key},
        timeout=60,
    )
    assert response.status_code == 200
    assert len(response.content) > 8000


def test_an_unknown_websocket_path_is_refused_cleanly(server: ServerProc) -> None:
    url = server.url.replace("http://", "ws://") + "/no/such/socket"
    with connect(url, open_timeout=10) as ws:
        message = json.loads(ws.recv(timeout=10))
        assert message["error"] == "not_found"
        assert message["code"] == 4404
        try:
            ws.recv(timeout=10)
        except Exception:
            pass
        assert ws.close_code == 4404
    assert "Traceback" not in server.log()
