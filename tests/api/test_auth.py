"""API keys over HTTP: both headers work; bad keys get 401, missing scopes 403."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from accounts.keys import api_key_create, api_key_revoke
from accounts.models import ApiKey
from tests.fixtures import TenantCtx
from tts.models import Voice


def test_it_accepts_xi_api_key_and_bearer(tenant_a: TenantCtx, joe: Voice) -> None:
    from rest_framework.test import APIClient

    assert tenant_a.client().get("/v1/voices").status_code == 200
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {tenant_a.key}")
    assert client.get("/v1/voices").status_code == 200


@pytest.mark.parametrize(
    ("make_key", "code"),
    [
        (lambda ctx: "", "missing_api_key"),
        (lambda ctx: "garbage", "invalid_api_key"),
        (lambda ctx: "tts_000000000000_nope", "invalid_api_key"),
        (lambda ctx: ctx.key[:-2] + "xx", "invalid_api_key"),
    ],
    ids=["missing", "malformed", "unknown", "wrong-secret"],
)
def test_it_refuses_bad_keys(tenant_a: TenantCtx, joe: Voice, make_key, code: str) -> None:
    from rest_framework.test import APIClient

    client = APIClient()
    key = make_key(tenant_a)
    if key:
        client.credentials(HTTP_XI_API_KEY=key)
    response = client.post("/v1/text-to-speech/joe", {"text": "Hi"}, format="json")
    assert response.status_code == 401
    assert response.json()["detail"]["status"] == code
    assert response["WWW-Authenticate"]


def test_it_refuses_revoked_and_expired_keys(tenant_a: TenantCtx, joe: Voice) -> None:
    api_key_revoke(api_key=tenant_a.api_key)
    response = tenant_a.client().get("/v1/voices")
    assert response.status_code == 401
    assert response.json()["detail"]["status"] == "api_key_revoked"

    issued = api_key_create(tenant=tenant_a.tenant, name="old", expires_at=timezone.now() - dt.timedelta(seconds=1))
    response = tenant_a.client(issued.raw_key).get("/v1/voices")
    assert response.status_code == 401
    assert response.json()["detail"]["status"] == "api_key_expired"


def test_it_refuses_a_disabled_tenant(tenant_a: TenantCtx, joe: Voice) -> None:
    tenant_a.tenant.is_active = False
    tenant_a.tenant.save()
    assert tenant_a.client().get("/v1/voices").status_code == 401


def test_it_needs_the_scope(tenant_a: TenantCtx, joe: Voice) -> None:
    issued = api_key_create(tenant=tenant_a.tenant, name="read-only", scopes=["voices:read"])
    client = tenant_a.client(issued.raw_key)
    assert client.get("/v1/voices").status_code == 200
    response = client.post("/v1/text-to-speech/joe", {"text": "Hi"}, format="json")
    assert response.status_code == 403
    assert "'tts'" in response.json()["detail"]["message"]
    response = client.post("/v1/audio/speech", {"model": "tts-1", "input": "Hi", "voice": "joe"}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["type"] == "permission_error"


def test_it_stores_only_a_hash(tenant_a: TenantCtx) -> None:
    row = ApiKey.objects.get(pk=tenant_a.api_key.pk)
    secret = tenant_a.key.split("_", 2)[2]
    for value in (row.prefix, row.secret_hash, row.name):
        assert secret not in value
    assert len(row.secret_hash) == 64


def test_it_records_last_use(tenant_a: TenantCtx, joe: Voice) -> None:
    tenant_a.client().get("/v1/voices")
    assert ApiKey.objects.get(pk=tenant_a.api_key.pk).last_used_at is not None
