"""Failed logins are throttled per username and per client address (django-axes): past
LOGIN_FAILURE_LIMIT the login answers 429, even with the right password, until the lockout
ends; other users and other addresses are not affected."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.test import Client, override_settings

from accounts.login_throttle import client_ip
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


@override_settings(LOGIN_TRUSTED_PROXIES=1)
def test_behind_a_proxy_the_forwarded_address_counts(rf: pytest.FixtureRequest) -> None:
    request = rf.get("/login/", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7", REMOTE_ADDR="10.0.0.2")  # type: ignore[attr-defined]
    # The client wrote 6.6.6.6 itself; the trusted proxy saw 203.0.113.7.
    assert client_ip(request) == "203.0.113.7"
    bare = rf.get("/login/", REMOTE_ADDR="10.0.0.2")  # type: ignore[attr-defined]
    assert client_ip(bare) == "10.0.0.2"
