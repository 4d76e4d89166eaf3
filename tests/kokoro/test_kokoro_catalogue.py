"""The voice catalogue by language: /v1/voices?language=, the dashboard's filter, a Japanese preview."""

from __future__ import annotations

from django.test import Client

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice
from tts.synthesis.preview import preview_text

JAPANESE = ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]


def test_the_api_lists_voices_with_their_language_and_filters_by_it(
    tenant_a: TenantCtx, joe: Voice, kokoro: Voice
) -> None:
    client = tenant_a.client()
    every = client.get("/v1/voices").json()["voices"]
    listed = {v["voice_id"]: v["language"] for v in every}
    assert len(listed) == 1 + 54 and listed["joe"] == "en" and listed["zf_xiaobei"] == "zh"
    assert {v for v, language in listed.items() if language == "ja"} == set(JAPANESE)
    kumo = next(v for v in every if v["voice_id"] == "jm_kumo")
    assert kumo["labels"]["language"] == "ja" and kumo["labels"]["gender"] == "male"
    japanese = client.get("/v1/voices?language=ja").json()
    assert sorted(v["voice_id"] for v in japanese["voices"]) == JAPANESE and japanese["total_count"] == 5
    english = [v["voice_id"] for v in client.get("/v1/voices?language=en-US").json()["voices"]]
    assert "joe" in english and "bm_george" in english and len(english) == 1 + 28
    assert client.get("/v1/voices?language=ko").json()["voices"] == []


def test_the_dashboard_filters_voices_by_language(tenant_a: TenantCtx, joe: Voice, kokoro: Voice) -> None:
    owner = Client()
    owner.force_login(tenant_a.owner)  # type: ignore[arg-type]
    page = owner.get("/voices/").content.decode()
    assert 'id="voice-language"' in page and '<option value="ja">ja</option>' in page
    assert "<code>jm_kumo</code> · ja · shared" in page and "<code>joe</code> · en" in page
    japanese = owner.get("/voices/?language=ja").content.decode()
    assert "<code>jf_alpha</code>" in japanese and "<code>joe</code>" not in japanese
    playground = owner.get("/playground/").content.decode()
    assert "Alpha (ja)" in playground


def test_a_japanese_voice_previews_in_japanese(tenant_a: TenantCtx, kokoro: Voice) -> None:
    owner = Client()
    owner.force_login(tenant_a.owner)  # type: ignore[arg-type]
    assert preview_text(kokoro) == "こんにちは、Alphaです。よろしくお願いします。"
    response = owner.get("/voices/jf_alpha/preview.mp3")
    assert response.status_code == 200
    samples, rate = decode_audio(response.content, "mp3_22050_32")
    assert_speech(samples, rate, expected_rate=22050)
    assert not SynthesisRecord.objects.exists()
