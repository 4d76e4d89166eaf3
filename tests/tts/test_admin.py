"""The operator admin: pages load, keys are created through the service (secret shown once),
model versions activate, and the history list stays cheap."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import ApiKey
from tests.fixtures import TenantCtx, second_version
from tts.models import ModelVersion, SynthesisRecord, Voice


@pytest.fixture
def admin_client(db: None) -> Client:
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-root")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "url",
    [
        "/admin/accounts/tenant/",
        "/admin/accounts/plan/",
        "/admin/accounts/apikey/",
        "/admin/accounts/usage/",
        "/admin/tts/modelversion/",
        "/admin/tts/voice/",
        "/admin/tts/synthesisrecord/",
        "/admin/tts/job/",
    ],
)
def test_it_lists(admin_client: Client, tenant_a: TenantCtx, joe: Voice, url: str) -> None:
    assert admin_client.get(url).status_code == 200


def test_history_list_has_no_n_plus_one(
    admin_client: Client, tenant_a: TenantCtx, django_assert_max_num_queries
) -> None:
    SynthesisRecord.objects.bulk_create(
        SynthesisRecord(tenant=tenant_a.tenant, voice_id="joe", output_format="mp3_44100_128", source="openai")
        for _ in range(50)
    )
    with django_assert_max_num_queries(12):
        assert admin_client.get("/admin/tts/synthesisrecord/").status_code == 200


def test_it_creates_keys_through_the_service(admin_client: Client, tenant_a: TenantCtx) -> None:
    response = admin_client.post(
        "/admin/accounts/apikey/add/",
        {"tenant": tenant_a.tenant.pk, "name": "from admin", "scopes": '["tts"]'},
    )
    # The secret is in this page, not in a redirect's messages cookie or the session.
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    key = ApiKey.objects.get(name="from admin")
    raw = response.context["raw_key"]
    assert raw in response.content.decode()
    assert raw.startswith(f"tts_{key.prefix}_") and len(key.secret_hash) == 64
    assert all(raw not in morsel.value for morsel in response.cookies.values())
    assert all(raw not in morsel.value for morsel in admin_client.cookies.values())
    assert raw not in str(dict(admin_client.session))
    assert raw not in admin_client.get(f"/admin/accounts/apikey/{key.pk}/change/").content.decode()
    assert raw not in admin_client.get("/admin/accounts/apikey/").content.decode()


def test_it_activates_a_version(admin_client: Client, joe: Voice) -> None:
    old = ModelVersion.objects.get()
    new = second_version(old)
    admin_client.post("/admin/tts/modelversion/", {"action": "activate", "_selected_action": [new.pk]})
    old.refresh_from_db()
    new.refresh_from_db()
    assert (old.status, new.status) == ("retired", "active")
