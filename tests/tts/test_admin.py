"""The operator admin: pages load, keys are created through the service (secret shown once, after a
redirect), model versions activate, the history list stays cheap, and a voice in use is not deleted."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import ApiKey
from tests.fixtures import TenantCtx, second_version
from tts.catalogue.voice_usage import voice_uses
from tts.models import Job, ModelVersion, ReferenceSpeaker, SynthesisRecord, Voice


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


def test_it_creates_keys_through_the_service_with_post_redirect_get(admin_client: Client, tenant_a: TenantCtx) -> None:
    response = admin_client.post(
        "/admin/accounts/apikey/add/",
        {"tenant": tenant_a.tenant.pk, "name": "from admin", "scopes": '["tts"]'},
    )
    key = ApiKey.objects.get(name="from admin")
    created = f"/admin/accounts/apikey/{key.pk}/created/"
    assert response.status_code == 302 and response["Location"] == created
    # The secret travels to that page encrypted in a cookie bound to it: never readable, never in the session.
    cookie = response.cookies["tts_new_key"]
    assert cookie["path"] == created and cookie["httponly"] and cookie["samesite"] == "Strict"
    shown = admin_client.get(created)
    assert shown.status_code == 200 and "no-store" in shown["Cache-Control"]
    raw = shown.context["raw_key"]
    assert raw in shown.content.decode()
    assert raw.startswith(f"tts_{key.prefix}_") and len(key.secret_hash) == 64
    assert raw not in cookie.value and raw not in str(dict(admin_client.session))
    assert shown.cookies["tts_new_key"].value == ""  # deleted: shown once
    # A reload shows no secret and creates nothing.
    again = admin_client.get(created).content.decode()
    assert raw not in again and "cannot be shown again" in again
    assert ApiKey.objects.filter(tenant=tenant_a.tenant, name="from admin").count() == 1
    # The cookie of one key opens no other key's page.
    admin_client.post(
        "/admin/accounts/apikey/add/", {"tenant": tenant_a.tenant.pk, "name": "second", "scopes": '["tts"]'}
    )
    admin_client.cookies["tts_new_key"]["path"] = "/"  # as if sent to every page (the test client ignores paths)
    assert admin_client.get(created).context["raw_key"] is None
    assert raw not in admin_client.get(f"/admin/accounts/apikey/{key.pk}/change/").content.decode()
    assert raw not in admin_client.get("/admin/accounts/apikey/").content.decode()


def test_it_activates_a_version(admin_client: Client, joe: Voice) -> None:
    old = ModelVersion.objects.get()
    new = second_version(old)
    admin_client.post("/admin/tts/modelversion/", {"action": "activate", "_selected_action": [new.pk]})
    old.refresh_from_db()
    new.refresh_from_db()
    assert (old.status, new.status) == ("retired", "active")


def test_a_voice_in_use_is_not_deleted_and_says_what_uses_it(
    admin_client: Client, tenant_a: TenantCtx, joe: Voice, settings: Any
) -> None:
    settings.TTS_OPENAI_VOICES = {"alloy": "spare"}
    spare = Voice.objects.create(voice_id="spare", name="Spare", language="en", model_id=joe.model_id)
    mix = Voice.objects.create(
        voice_id="mix",
        name="Mix",
        language="en",
        model_id=joe.model_id,
        tenant=tenant_a.tenant,
        blend=[{"voice_id": "spare", "speaker_index": 0, "weight": 1.0}],
    )
    ReferenceSpeaker.objects.create(name="narrator", voice_id="spare")
    Job.objects.create(
        tenant=tenant_a.tenant,
        voice_id="spare",
        output_format="mp3_44100_128",
        text="Later.",
        characters=6,
        status=Job.Status.QUEUED,
    )
    SynthesisRecord.objects.create(
        tenant=tenant_a.tenant, voice_id="spare", output_format="mp3_44100_128", source="openai", status="success"
    )
    assert voice_uses(spare) == [
        "History: items of 1 tenant(s) name it (alpha).",
        "Jobs: 1 queued or running job(s) speak with it.",
        "Blends: Mix (mix) mix its style.",
        "Reference speakers: narrator speak with it on /api/tts and /tts.",
        "Settings: it is OpenAI's alloy (TTS_OPENAI_VOICES).",
    ]
    page = admin_client.get(f"/admin/tts/voice/{spare.pk}/delete/").content.decode()
    assert "is in use, so it cannot be deleted" in page and 'name="post"' not in page
    assert admin_client.post(f"/admin/tts/voice/{spare.pk}/delete/", {"post": "yes"}).status_code == 200
    assert Voice.objects.filter(pk=spare.pk).exists()
    # The default voice is in use by the settings alone; a voice nothing names deletes as before.
    assert voice_uses(joe) == ["Settings: it is the default voice (TTS_DEFAULT_VOICE_ID)."]
    assert voice_uses(mix) == []
    assert admin_client.post(f"/admin/tts/voice/{mix.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Voice.objects.filter(pk=mix.pk).exists()
