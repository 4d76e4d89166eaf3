"""Session login, logout, CSRF and the tenant switcher."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import Membership
from tests.fixtures import TenantCtx

PAGES = ["/", "/keys/", "/playground/", "/history/", "/voices/"]


@pytest.mark.parametrize("url", PAGES)
def test_it_sends_anonymous_visitors_to_login(db: None, url: str) -> None:
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_it_logs_in_with_a_password_and_out_with_a_post(tenant_a: TenantCtx) -> None:
    client = Client(enforce_csrf_checks=True)
    page = client.get("/login/")
    assert page.status_code == 200
    assert b'<label for="id_username">Username</label>' in page.content
    token = page.cookies["csrftoken"].value
    wrong = client.post("/login/", {"username": "alpha-owner", "password": "nope", "csrfmiddlewaretoken": token})
    assert wrong.status_code == 200 and b'role="alert"' in wrong.content
    response = client.post(
        "/login/", {"username": "alpha-owner", "password": "pw-" + "alpha" * 4, "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302 and response["Location"] == "/"
    overview = client.get("/")
    assert overview.status_code == 200
    assert client.session["current_tenant_id"] == tenant_a.tenant.pk
    # Logging out needs a POST with a token: a link or an image cannot do it.
    assert client.get("/logout/").status_code == 405
    token = client.cookies["csrftoken"].value
    assert client.post("/logout/", {"csrfmiddlewaretoken": token}).status_code == 302
    assert client.get("/").status_code == 302


def test_it_refuses_a_form_without_a_csrf_token(tenant_a: TenantCtx) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(tenant_a.owner)  # type: ignore[arg-type]
    response = client.post("/keys/new/", {"name": "sneaky", "scopes": ["tts"]})
    assert response.status_code == 403
    assert b"security token" in response.content
    assert not tenant_a.tenant.api_keys.filter(name="sneaky").exists()


def test_it_switches_between_the_users_tenants(tenant_a: TenantCtx, tenant_b: TenantCtx) -> None:
    Membership.objects.create(user=tenant_a.owner, tenant=tenant_b.tenant, role=Membership.Role.MEMBER)
    client = Client()
    client.force_login(tenant_a.owner)  # type: ignore[arg-type]
    page = client.get("/")
    assert b'id="tenant-select"' in page.content and b"Beta (Member)" in page.content
    response = client.post("/tenant/switch/", {"tenant_id": tenant_b.tenant.pk, "next": "/history/"})
    assert response.status_code == 302 and response["Location"] == "/history/"
    assert client.session["current_tenant_id"] == tenant_b.tenant.pk
    overview = client.get("/")
    assert b"Beta" in overview.content
    # A member of Beta, not an owner: no key management there.
    assert client.get("/keys/").status_code == 403
    # An open redirect through ?next is refused.
    away = client.post("/tenant/switch/", {"tenant_id": tenant_a.tenant.pk, "next": "https://evil.example/"})
    assert away["Location"] == "/"


def test_it_explains_when_the_user_has_no_tenant(db: None, django_user_model: type) -> None:
    user = django_user_model.objects.create_user(username="loner", password="pw-loner-loner")
    client = Client()
    client.force_login(user)
    response = client.get("/")
    assert response.status_code == 403
    assert b"not a member of any active tenant" in response.content
