"""``seed`` and ``voice_settings.stability``: reproducible audio on both engines, the cache keyed by the seed."""

from __future__ import annotations

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx, make_joe
from tts.models import SynthesisRecord

TEXT = "The harbour was quiet that morning. Fishing boats rocked against the old stone wall."
URL = "/v1/text-to-speech/joe?output_format=pcm_22050"


def _say(ctx: TenantCtx, **body: object) -> bytes:
    response = ctx.client().post(URL, {"text": TEXT, **body}, format="json")
    assert response.status_code == 200, response.content
    return bytes(response.content)


@pytest.mark.parametrize("engine", ["piper-onnx", "vits-torch"])
def test_the_same_seed_gives_the_same_bytes_and_another_seed_differs(
    tenant_a: TenantCtx, engine: str, settings: object
) -> None:
    settings.TTS_AUDIO_CACHE_ENABLED = False  # type: ignore[attr-defined]  # the engine answers every time
    make_joe(engine)
    first = _say(tenant_a, seed=7)
    again = _say(tenant_a, seed=7)
    other = _say(tenant_a, seed=8)
    unseeded = [_say(tenant_a), _say(tenant_a)]
    samples, rate = decode_audio(first, "pcm_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    assert first == again
    assert other != first
    assert unseeded[0] != unseeded[1]  # without a seed the noise is fresh, as before
    assert SynthesisRecord.objects.filter(tenant=tenant_a.tenant, cache_hit=False).count() == 5


def test_the_cache_key_includes_the_seed(tenant_a: TenantCtx, joe: object) -> None:
    first = tenant_a.client().post(URL, {"text": TEXT, "seed": 1}, format="json")
    hit = tenant_a.client().post(URL, {"text": TEXT, "seed": 1}, format="json")
    other = tenant_a.client().post(URL, {"text": TEXT, "seed": 2}, format="json")
    assert (first["x-cache"], hit["x-cache"], other["x-cache"]) == ("miss", "hit", "miss")
    assert hit.content == first.content and other.content != first.content


def test_high_stability_varies_less_than_low_stability(tenant_a: TenantCtx, joe: object, settings: object) -> None:
    settings.TTS_AUDIO_CACHE_ENABLED = False  # type: ignore[attr-defined]
    steady = [_say(tenant_a, seed=seed, voice_settings={"stability": 1.0}) for seed in (1, 2)]
    lively = [_say(tenant_a, seed=seed, voice_settings={"stability": 0.0}) for seed in (1, 2)]
    assert steady[0] == steady[1]  # no noise left: the seed changes nothing
    assert lively[0] != lively[1]
    for take in (*steady, *lively):
        assert_speech(decode_audio(take, "pcm_22050")[0], 22050, expected_rate=22050, text=TEXT)
