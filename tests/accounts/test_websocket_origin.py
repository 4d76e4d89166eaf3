"""A dashboard session counts on a WebSocket only when the Origin's scheme, host and port are
the socket's own (or a CSRF_TRUSTED_ORIGINS entry): another port on localhost is another site."""

from __future__ import annotations

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.test import override_settings

from accounts.tenancy import _same_origin, websocket_session_tenant
from tests.fixtures import TenantCtx


def scope(origin: str | None, host: str, **extra_headers: str) -> dict:
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    headers += [(k.replace("_", "-").encode(), v.encode()) for k, v in extra_headers.items()]
    return {"type": "websocket", "headers": headers}


@pytest.mark.parametrize(
    ("origin", "host", "allowed"),
    [
        ("http://localhost:8000", "localhost:8000", True),
        ("http://LOCALHOST:8000", "localhost:8000", True),
        ("http://testserver", "testserver", True),
        ("http://testserver:80", "testserver", True),
        ("http://localhost:9999", "localhost:8000", False),  # any port on localhost used to pass
        ("http://localhost", "localhost:8000", False),
        ("https://localhost:8000", "localhost:8000", False),  # another scheme is another origin
        ("http://127.0.0.1:8000", "localhost:8000", False),
        ("http://evil.example", "localhost:8000", False),
        ("null", "localhost:8000", False),
        ("ftp://localhost:8000", "localhost:8000", False),
        ("http://localhost:99999", "localhost:8000", False),
        (None, "localhost:8000", False),
    ],
)
def test_it_compares_scheme_host_and_port(origin: str | None, host: str, allowed: bool) -> None:
    assert _same_origin(scope(origin, host)) is allowed


@override_settings(CSRF_TRUSTED_ORIGINS=["https://app.example.com", "https://*.tenants.example.com"])
@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("https://app.example.com", True),
        ("https://app.example.com:443", True),
        ("https://app.example.com:8443", False),
        ("http://app.example.com", False),
        ("https://acme.tenants.example.com", True),
        ("https://tenants.example.com.evil.example", False),
    ],
)
def test_trusted_origins_are_compared_the_same_way(origin: str, allowed: bool) -> None:
    assert _same_origin(scope(origin, "internal:8000")) is allowed


@override_settings(SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"))
def test_behind_a_tls_proxy_the_page_is_https() -> None:
    assert _same_origin(scope("https://tts.example.com", "tts.example.com", x_forwarded_proto="https"))
    assert not _same_origin(scope("http://tts.example.com", "tts.example.com", x_forwarded_proto="https"))
    assert not _same_origin(scope("https://tts.example.com", "tts.example.com"))


@pytest.mark.django_db
def test_a_session_from_another_port_gets_no_tenant(tenant_a: TenantCtx) -> None:
    session = SessionStore()
    session["current_tenant_id"] = tenant_a.tenant.pk
    session.save()
    base = {"user": tenant_a.owner, "session": session}
    assert websocket_session_tenant({**scope("http://localhost:8000", "localhost:8000"), **base}) == tenant_a.tenant
    assert websocket_session_tenant({**scope("http://localhost:3000", "localhost:8000"), **base}) is None
