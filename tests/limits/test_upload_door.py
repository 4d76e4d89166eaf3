"""The admin's upload route takes a large body only from a staff session (ttsplatform/upload_grant.py):
anyone else, with or without a session, with a forged, foreign or expired grant, gets the plain
413 before the body is read; the grant is signed, short-lived, bound to its session and taken back
at logout. (On a real daphne: tests/limits/test_body_limit_daphne.py.)"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import signing
from django.test import Client, override_settings

from tts.models import ModelVersion
from ttsplatform.body_limit import BodyLimitASGI
from ttsplatform.upload_grant import GRANT_COOKIE, grant_in_cookies, grant_valid, issue_grant

ADD = "/admin/tts/modelversion/add/"
BIG = 8 * 1024 * 1024  # over TTS_MAX_BODY_BYTES (1 MiB), under TTS_MODEL_UPLOAD_MAX_BYTES


def post_big(client: Client) -> Any:
    # Only the header says 8 MiB: the refusal must come before anything reads the (absent) body.
    return client.generic("POST", ADD, b"x", content_type="multipart/form-data; boundary=b", CONTENT_LENGTH=str(BIG))


def staff_client(db: None) -> Client:
    user = get_user_model().objects.create_user("staffer", password="pw-staffer-staffer", is_staff=True)
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_anyone_but_staff_gets_the_plain_limit_on_the_upload_route(django_user_model: type) -> None:
    member = django_user_model.objects.create_user("member", password="pw-member-member")
    logged_in = Client()
    logged_in.force_login(member)
    for client in (Client(), logged_in):
        response = post_big(client)
        assert response.status_code == 413
        detail = json.loads(response.content)["detail"]
        assert detail["status"] == "body_too_large" and str(1024 * 1024) in detail["message"]
        assert "staff session" in detail["message"]
    assert not ModelVersion.objects.exists()


@pytest.mark.django_db
def test_a_staff_session_gets_a_grant_for_its_session_only(db: None) -> None:
    client = staff_client(db)
    page = client.get("/admin/")
    cookie = page.cookies[GRANT_COOKIE]
    assert cookie["path"] == "/admin/" and cookie["httponly"] and int(cookie["max-age"]) == 3600
    session = client.cookies["sessionid"].value
    assert grant_valid(cookie.value, session)
    assert grant_in_cookies({GRANT_COOKIE: cookie.value, "sessionid": session})
    # With another session, forged, expired or alone it is worth nothing.
    assert not grant_valid(cookie.value, "another-session-key")
    assert not grant_valid(cookie.value[:-2] + "xx", session)
    assert not grant_valid(issue_grant(1, session), session, max_age=-1)
    assert not grant_valid(signing.TimestampSigner().sign("1:" + "0" * 32), session)
    assert not grant_in_cookies({GRANT_COOKIE: cookie.value})
    # A fresh grant is not sent again on every page; logging out takes it back.
    assert GRANT_COOKIE not in client.get("/admin/").cookies
    out = client.post("/admin/logout/")
    assert out.cookies[GRANT_COOKIE].value == "" and out.cookies[GRANT_COOKIE]["max-age"] == 0


@pytest.mark.django_db
def test_no_grant_for_a_member_or_outside_the_admin(django_user_model: type, db: None) -> None:
    member = django_user_model.objects.create_user("member", password="pw-member-member")
    client = Client()
    client.force_login(member)
    assert GRANT_COOKIE not in client.get("/admin/").cookies
    assert GRANT_COOKIE not in staff_client(db).get("/healthz").cookies


def _asgi_status(headers: list[tuple[bytes, bytes]]) -> int:
    """What the ASGI wrapper answers a POST to the upload route with these headers (the app says 200)."""
    sent: list[dict] = []

    async def app(scope: dict, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "path": ADD, "headers": [(b"content-length", str(BIG).encode()), *headers]}
    asyncio.run(BodyLimitASGI(app)(scope, receive, send))
    return int(sent[0]["status"])


@override_settings(TTS_MAX_BODY_BYTES=1024 * 1024)
def test_the_asgi_wrapper_reads_the_grant_from_the_cookie_header() -> None:
    grant = issue_grant(1, "the-session")
    assert _asgi_status([]) == 413
    assert _asgi_status([(b"cookie", f"{GRANT_COOKIE}={grant}; sessionid=other".encode())]) == 413
    assert _asgi_status([(b"cookie", f"sessionid=the-session; {GRANT_COOKIE}={grant}".encode())]) == 200
