"""A member of tenant A sees nothing of tenant B on any page, guessed ids included."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.keys import api_key_create
from accounts.models import Usage
from accounts.quota import reserve_characters
from tests.dashboard.conftest import make_records
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice

PAGES = ["/", "/keys/", "/playground/", "/history/", "/voices/", "/history/?status=success"]


@pytest.fixture
def b_things(tenant_b: TenantCtx, joe: Voice) -> dict[str, object]:
    reserve_characters(tenant=tenant_b.tenant, characters=77_777)
    record = make_records(tenant_b, 1)[0]
    record.alignment = {"characters": ["a"], "character_start_times_seconds": [0], "character_end_times_seconds": [1]}
    record.save(update_fields=["alignment"])
    key = api_key_create(tenant=tenant_b.tenant, name="beta-secret-key-name").api_key
    voice = Voice.objects.create(
        voice_id="beta-private", name="BetaOnlyVoice", model_id=joe.model_id, tenant=tenant_b.tenant
    )
    return {"record": record, "key": key, "voice": voice}


def test_it_shows_none_of_another_tenants_data(tenant_a: TenantCtx, owner_a: Client, b_things: dict) -> None:
    make_records(tenant_a, 2)
    record: SynthesisRecord = b_things["record"]
    forbidden = [
        "beta item",
        str(record.pk),
        "beta-secret-key-name",
        b_things["key"].prefix,
        "beta key",
        "77,777",
        "BetaOnlyVoice",
        "beta-private",
    ]
    for url in PAGES:
        html = owner_a.get(url).content.decode()
        for needle in forbidden:
            assert needle not in html, f"{url} shows {needle!r} of tenant B"
    # A's own usage is what A sees: nothing of B's 77,777 characters.
    assert not Usage.objects.filter(tenant=tenant_a.tenant).exists()
    assert "<strong>0</strong> of 100,000 characters used" in owner_a.get("/").content.decode()


def test_it_answers_404_to_guessed_ids(
    tenant_a: TenantCtx, tenant_b: TenantCtx, owner_a: Client, b_things: dict
) -> None:
    record: SynthesisRecord = b_things["record"]
    key = b_things["key"]
    for url in (
        f"/history/{record.pk}/audio/",
        f"/history/{record.pk}/download/",
        f"/history/{record.pk}/download/?format=wav_22050",
        f"/history/{record.pk}/captions.vtt",
        f"/history/?before={record.pk}",
        "/voices/beta-private/preview.mp3",
        "/history/not-a-uuid/audio/",
    ):
        assert owner_a.get(url).status_code == 404, url
    assert owner_a.post(f"/history/{record.pk}/delete/").status_code == 404
    assert owner_a.post(f"/keys/{key.pk}/revoke/").status_code == 404
    assert owner_a.post(f"/keys/{tenant_b.api_key.pk}/revoke/").status_code == 404
    assert owner_a.post("/tenant/switch/", {"tenant_id": tenant_b.tenant.pk}).status_code == 404
    assert owner_a.session["current_tenant_id"] == tenant_a.tenant.pk
    assert SynthesisRecord.objects.filter(pk=record.pk).exists()
    key.refresh_from_db()
    tenant_b.api_key.refresh_from_db()
    assert key.revoked_at is None and tenant_b.api_key.revoked_at is None


def test_it_ignores_a_session_pointing_at_a_tenant_the_user_left(
    tenant_a: TenantCtx, tenant_b: TenantCtx, owner_a: Client, b_things: dict
) -> None:
    session = owner_a.session
    session["current_tenant_id"] = tenant_b.tenant.pk
    session.save()
    html = owner_a.get("/history/").content.decode()
    assert "beta item" not in html
    assert owner_a.session["current_tenant_id"] == tenant_a.tenant.pk
