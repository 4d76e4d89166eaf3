"""Failed logins are throttled per username and per client address (django-axes): past
LOGIN_FAILURE_LIMIT the login answers 429, even with the right password, until the lockout
ends; other users and other addresses are not affected."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.test import Client, override_settings

from infra.client_address import client_address
from tests.fixtures import TenantCtx

PASSWORD = "pw-" + "alpha" * 4


def attempt(username: str, password: str, *, ip: str = "10.0.0.1", url: str = "/login/") -> int:
    response = Client(REMOTE_ADDR=ip).post(url, {"username": username, "password": password})
    return response.status_code


def test_a_username_is_locked_after_the_failure_limit(tenant_a: TenantCtx, tenant_b: TenantCtx) -> None:
    for i in range(4):
        # Each from another address: the username's count is what locks.
        assert attempt("alpha-owner", "wrong", ip=f"10.0.1.{i}") == 200
    # The fifth failure is answered with the lockout.
    assert attempt("alpha-owner", "wrong", ip="10.0.1.9") == 429
    response = Client(REMOTE_ADDR="10.0.2.1").post("/login/", {"username": "alpha-owner", "password": PASSWORD})
    assert response.status_code == 429
    assert b"Too many failed logins" in response.content
    assert "_auth_user_id" not in response.client.session
    # Another user from another address logs in as usual.
    assert attempt("beta-owner", "pw-" + "beta" * 4, ip="10.0.3.1") == 302


def test_an_address_is_locked_after_the_failure_limit(tenant_a: TenantCtx, tenant_b: TenantCtx) -> None:
    for i in range(4):
        assert attempt(f"guess-{i}", "wrong", ip="10.9.9.9") == 200
    assert attempt("guess-4", "wrong", ip="10.9.9.9") == 429
    # From that address nobody gets in, not even with the right password.
    assert attempt("alpha-owner", PASSWORD, ip="10.9.9.9") == 429
    # From elsewhere the same account is fine.
    assert attempt("alpha-owner", PASSWORD, ip="10.9.9.10") == 302


def test_a_success_resets_the_count(tenant_a: TenantCtx) -> None:
    for _ in range(4):
        assert attempt("alpha-owner", "wrong") == 200
    assert attempt("alpha-owner", PASSWORD) == 302
    for _ in range(4):
        assert attempt("alpha-owner", "wrong") == 200
    assert attempt("alpha-owner", PASSWORD) == 302


def test_the_admin_login_is_throttled_too(tenant_a: TenantCtx) -> None:
    for _ in range(4):
        assert attempt("alpha-owner", "wrong", url="/admin/login/") == 200
    assert attempt("alpha-owner", "wrong", url="/admin/login/") == 429
    assert attempt("alpha-owner", PASSWORD, url="/admin/login/") == 429
    assert AccessAttempt.objects.filter(username="alpha-owner").exists()


@override_settings(TRUSTED_PROXIES="1")
def test_behind_a_proxy_the_forwarded_address_counts(rf: pytest.FixtureRequest) -> None:
    request = rf.get("/login/", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7", REMOTE_ADDR="10.0.0.2")  # type: ignore[attr-defined]
    # The client wrote 6.6.6.6 itself; the trusted proxy saw 203.0.113.7.
    assert client_address(request) == "203.0.113.7"
    bare = rf.get("/login/", REMOTE_ADDR="10.0.0.2")  # type: ignore[attr-defined]
    assert client_address(bare) == "10.0.0.2"


def attempt_from(username: str, *, peer: str, forwarded: str) -> int:
    client = Client(REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=forwarded)
    return client.post("/login/", {"username": username, "password": "wrong"}).status_code


def test_a_forged_forwarded_for_does_not_dodge_the_address_lock(tenant_a: TenantCtx) -> None:
    # No trusted proxy (the default): the header is the client's own words and changes nothing.
    for i in range(4):
        assert attempt_from(f"guess-{i}", peer="203.0.113.50", forwarded=f"10.0.0.{i}") == 200
    assert attempt_from("guess-4", peer="203.0.113.50", forwarded="10.0.0.99") == 429
    assert attempt("alpha-owner", PASSWORD, ip="203.0.113.50") == 429


@override_settings(TRUSTED_PROXIES="10.0.0.0/24")
def test_behind_trusted_proxies_only_the_hops_they_wrote_count(tenant_a: TenantCtx) -> None:
    # The proxy (10.0.0.2) appends what it saw (198.51.100.7); whatever the client put left of it varies.
    for i in range(4):
        assert attempt_from(f"guess-{i}", peer="10.0.0.2", forwarded=f"10.9.{i}.1, 198.51.100.7") == 200
    assert attempt_from("guess-4", peer="10.0.0.2", forwarded="1.1.1.1, 198.51.100.7") == 429
    # Another client behind the same proxy is not locked out.
    assert attempt_from("guess-5", peer="10.0.0.2", forwarded="198.51.100.8") == 200
