"""The reference endpoints' speaker table, edited in the admin, decides the voice of ``/api/tts``."""

from __future__ import annotations

import io
import wave

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.fixtures import TenantCtx
from tts.models import ReferenceSpeaker, SynthesisRecord, Voice


@pytest.fixture
def admin_client(db: None) -> Client:
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-root")
    client = Client()
    client.force_login(user)
    return client


def test_the_migration_seeds_cosyvoices_speakers_and_the_articles_names(db: None) -> None:
    table = dict(ReferenceSpeaker.objects.values_list("name", "voice_id"))
    assert table == {
        "中文女": "zf_xiaobei",
        "中文男": "zm_yunjian",
        "英文女": "af_heart",
        "英文男": "am_michael",
        "日语男": "jm_kumo",
        "粤语女": "",
        "韩语女": "",
        "xiaoyu": "zf_xiaoyi",
        "female_01": "zf_xiaoxiao",
        "male_01": "zm_yunxi",
    }


def test_an_operator_points_a_speaker_at_another_voice(admin_client: Client, tenant_a: TenantCtx, joe: Voice) -> None:
    speaker = ReferenceSpeaker.objects.get(name="英文男")
    client = tenant_a.client()
    before = client.post("/api/tts", {"text": "Hello there.", "speaker": "英文男"}, format="json")
    assert before.status_code == 400 and "has no voice on this server" in before.json()["detail"]  # no Kokoro here

    page = admin_client.get(f"/admin/tts/referencespeaker/{speaker.pk}/change/")
    assert page.status_code == 200 and b'value="joe"' in page.content  # the voices offered
    saved = admin_client.post(
        f"/admin/tts/referencespeaker/{speaker.pk}/change/",
        {"name": "英文男", "voice_id": "joe", "note": "our English voice"},
    )
    assert saved.status_code == 302

    after = client.post("/api/tts", {"text": "Hello there.", "speaker": "英文男"}, format="json")
    assert after.status_code == 200, after.content
    with wave.open(io.BytesIO(after.content)) as w:
        assert w.getframerate() == 16000 and w.getnframes() > 8000
    assert SynthesisRecord.objects.get(tenant=tenant_a.tenant).voice_id == "joe"
    listed = client.post("/api/tts", {"text": "Hello.", "speaker": "粤语女"}, format="json").json()["detail"]
    assert listed.endswith("Speakers available: 英文男 (any voice id of GET /v1/voices works too).")


def test_a_voice_that_is_not_installed_cannot_be_chosen(admin_client: Client, joe: Voice) -> None:
    speaker = ReferenceSpeaker.objects.get(name="中文女")
    response = admin_client.post(
        f"/admin/tts/referencespeaker/{speaker.pk}/change/", {"name": "中文女", "voice_id": "nope", "note": ""}
    )
    assert response.status_code == 200 and b"Select a valid choice" in response.content
    assert ReferenceSpeaker.objects.get(pk=speaker.pk).voice_id == "zf_xiaobei"
