"""OpenAI's voice names map to the voices TTS_OPENAI_VOICES names (Kokoro's American and British)."""

from __future__ import annotations

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.catalogue.defaults import openai_voice
from tts.models import SynthesisRecord, Voice


def test_openais_names_map_to_their_documented_voices(tenant_a: TenantCtx, joe: Voice, kokoro: Voice) -> None:
    expected = {
        "alloy": "af_alloy",
        "ash": "am_adam",
        "ballad": "bm_george",
        "coral": "af_heart",
        "echo": "am_echo",
        "fable": "bm_fable",
        "nova": "af_nova",
        "onyx": "am_onyx",
        "sage": "af_sarah",
        "shimmer": "af_bella",
        "verse": "am_michael",
    }
    found = {name: openai_voice(tenant_a.tenant, name) for name in expected}
    assert {name: v.voice_id for name, v in found.items() if v is not None} == expected
    response = tenant_a.client().post(
        "/v1/audio/speech",
        {"model": "tts-1", "input": "Hello there.", "voice": "alloy", "response_format": "wav"},
        format="json",
    )
    assert response.status_code == 200, response.content
    samples, rate = decode_audio(response.content, "wav_24000")
    assert_speech(samples, rate, expected_rate=24000)
    assert SynthesisRecord.objects.get(tenant=tenant_a.tenant).voice_id == "af_alloy"


def test_the_map_is_configurable_and_falls_back_to_the_default_voice(
    tenant_a: TenantCtx, joe: Voice, kokoro: Voice, settings: object
) -> None:
    settings.TTS_OPENAI_VOICES = {"alloy": "zf_xiaobei", "echo": "not-installed"}  # type: ignore[attr-defined]
    from infra.lookup_cache import clear_lookup_caches

    clear_lookup_caches()
    assert openai_voice(tenant_a.tenant, "alloy").voice_id == "zf_xiaobei"  # type: ignore[union-attr]
    assert openai_voice(tenant_a.tenant, "Echo").voice_id == "joe"  # type: ignore[union-attr]
    assert openai_voice(tenant_a.tenant, "am_onyx").voice_id == "am_onyx"  # type: ignore[union-attr]
    assert openai_voice(tenant_a.tenant, "nobody") is None
