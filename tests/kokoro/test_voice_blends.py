"""Tenant-made voices: a saved blend of Kokoro styles, usable on every route, private to its tenant."""

from __future__ import annotations

import numpy as np
import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.catalogue.blends import VoiceBlendError, parse_blend
from tts.models import Voice

TEXT = "こんにちは。"


def pcm(ctx: TenantCtx, voice_id: str) -> np.ndarray:
    response = ctx.client().post(
        f"/v1/text-to-speech/{voice_id}?output_format=pcm_24000", {"text": TEXT}, format="json"
    )
    assert response.status_code == 200, response.content
    return decode_audio(response.content, "pcm_24000")[0]


def test_it_saves_a_blend_that_speaks_between_its_voices(
    tenant_a: TenantCtx, tenant_b: TenantCtx, kokoro: Voice
) -> None:
    response = tenant_a.client().post(
        "/v1/voices/blend", {"name": "Soft Kumo", "blend": "jf_alpha(1)+jm_kumo(3)"}, format="json"
    )
    assert response.status_code == 200, response.content
    voice_id = response.json()["voice_id"]
    voice = Voice.objects.get(voice_id=voice_id)
    assert voice.tenant == tenant_a.tenant and voice.language == "ja" and voice.model_id == "kokoro-82m-ja"
    assert [(c["voice_id"], c["weight"]) for c in voice.blend] == [("jf_alpha", 0.25), ("jm_kumo", 0.75)]
    assert response.json()["voice"]["blend"] == voice.blend

    blended, alpha, kumo = pcm(tenant_a, voice_id), pcm(tenant_a, "jf_alpha"), pcm(tenant_a, "jm_kumo")
    assert_speech(blended, 24000)
    for other in (alpha, kumo):
        n = min(len(blended), len(other))
        assert len(blended) != len(other) or not np.allclose(blended[:n], other[:n], atol=1e-3)

    # Every route takes it: OpenAI by name, the listing shows it to its tenant only.
    speech = tenant_a.client().post(
        "/v1/audio/speech",
        {"model": "tts-1", "input": TEXT, "voice": "Soft Kumo", "response_format": "pcm"},
        format="json",
    )
    assert speech.status_code == 200
    assert voice_id in [v["voice_id"] for v in tenant_a.client().get("/v1/voices?language=ja").json()["voices"]]
    assert voice_id not in [v["voice_id"] for v in tenant_b.client().get("/v1/voices").json()["voices"]]
    other = tenant_b.client().post(f"/v1/text-to-speech/{voice_id}", {"text": TEXT}, format="json")
    assert other.status_code == 404
    assert tenant_b.client().delete(f"/v1/voices/{voice_id}").status_code == 404

    assert tenant_a.client().delete(f"/v1/voices/{voice_id}").json() == {"status": "ok"}
    assert not Voice.objects.filter(voice_id=voice_id).exists()
    assert tenant_a.client().delete("/v1/voices/jf_alpha").status_code == 404  # shared voices stay


def test_it_takes_weights_as_a_mapping(tenant_a: TenantCtx, kokoro: Voice) -> None:
    response = tenant_a.client().post(
        "/v1/voices/blend",
        {"name": "Trio", "blend": {"jf_alpha": 2, "jf_nezumi": 1, "jf_tebukuro": 1}},
        format="json",
    )
    assert response.status_code == 200, response.content
    weights = [c["weight"] for c in Voice.objects.get(voice_id=response.json()["voice_id"]).blend]
    assert weights == [0.5, 0.25, 0.25]


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"name": "X", "blend": "jf_alpha+nobody"}, 404, "blend"),
        ({"name": "X", "blend": "jf_alpha+joe"}, 400, "blend"),
        ({"name": "X", "blend": "jf_alpha"}, 400, "blend"),
        ({"name": "X", "blend": "jf_alpha(0)+jm_kumo"}, 400, "blend"),
        ({"name": "", "blend": "jf_alpha+jm_kumo"}, 400, "name"),
        ({"name": "X", "blend": 3}, 400, "blend"),
    ],
)
def test_it_refuses_bad_blends_naming_the_field(
    tenant_a: TenantCtx, kokoro: Voice, joe: Voice, body: dict, status: int, field: str
) -> None:
    response = tenant_a.client().post("/v1/voices/blend", body, format="json")
    assert response.status_code == status, response.content
    assert response.json()["detail"]["param"] == field


def test_it_reads_kokoro_fastapi_spelling() -> None:
    assert [(p.voice_id, p.weight) for p in parse_blend("jf_alpha(2) + jm_kumo")] == [
        ("jf_alpha", 2.0),
        ("jm_kumo", 1.0),
    ]
    with pytest.raises(VoiceBlendError):
        parse_blend("jf_alpha((2)+x")


def test_the_dashboard_makes_previews_and_deletes_a_blend(tenant_a: TenantCtx, kokoro: Voice) -> None:
    from django.test import Client

    owner = Client()
    owner.force_login(tenant_a.owner)  # type: ignore[arg-type]
    page = owner.get("/voices/").content.decode()
    assert 'id="voice-blend"' in page and 'name="weight-jm_kumo"' in page
    response = owner.post("/voices/blend/", {"name": "Mix", "weight-jf_alpha": "1", "weight-jm_kumo": "1"})
    assert response.status_code == 302
    voice = Voice.objects.get(tenant=tenant_a.tenant, name="Mix")
    assert [c["weight"] for c in voice.blend] == [0.5, 0.5]
    page = owner.get("/voices/").content.decode()
    assert f"<code>{voice.voice_id}</code>" in page and "private to Alpha" in page
    preview = owner.get(f"/voices/{voice.voice_id}/preview.mp3")
    assert preview.status_code == 200
    samples, rate = decode_audio(preview.content, "mp3_22050_32")
    assert_speech(samples, rate, expected_rate=22050)
    # Errors are said once, next to the form, in the page's words; a negative weight is refused.
    bad = owner.post("/voices/blend/", {"name": "Solo", "weight-jf_alpha": "1"})
    assert bad.status_code == 400 and bad.content.decode().count("Give 2 to 5 voices a weight above 0") == 1
    negative = owner.post("/voices/blend/", {"name": "Neg", "weight-jf_alpha": "1", "weight-jm_kumo": "-5"})
    assert negative.status_code == 400
    assert "The weight of Kumo must be 0 (left out) or more." in negative.content.decode()
    assert not Voice.objects.filter(name__in=["Solo", "Neg"]).exists()
    assert owner.post(f"/voices/{voice.voice_id}/delete/").status_code == 302
    assert not Voice.objects.filter(pk=voice.pk).exists()
    assert owner.post("/voices/jf_alpha/delete/").status_code == 404
