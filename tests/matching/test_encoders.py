"""The two speaker encoders, on the weights their packages ship and the numpy front ends written
here: a voice is nearer to itself, on another text, than to other voices."""

from __future__ import annotations

import numpy as np
import pytest

from tests.audio_checks import decode_audio
from tests.fixtures import TenantCtx
from tests.matching.recordings import joe_pcm
from tts.matching import ENCODERS, similarity, speaker_encoder
from tts.matching.encoders import mel_filterbank
from tts.models import Voice


def test_the_mel_filterbank_is_slaneys() -> None:
    bank = mel_filterbank(16000, 512, 40)
    assert bank.shape == (40, 257) and (bank >= 0).all()
    peaks = bank.argmax(axis=1)
    assert (np.diff(peaks) >= 0).all() and peaks[0] <= 2 and peaks[-1] >= 230
    # Slaney's norm: each triangle's area over Hz is about 1 (2 / bandwidth times half the bandwidth).
    hz_per_bin = 16000 / 512
    assert np.allclose(bank.sum(axis=1)[5:] * hz_per_bin, 1.0, atol=0.1)


def _kokoro_pcm(ctx: TenantCtx, voice_id: str) -> np.ndarray:
    response = ctx.client().post(
        f"/v1/text-to-speech/{voice_id}?output_format=pcm_24000",
        {"text": "The garden is finally green again, and the old tree has blossom."},
        format="json",
    )
    assert response.status_code == 200, response.content
    return decode_audio(response.content, "pcm_24000")[0]


@pytest.mark.parametrize("name", ENCODERS)
def test_a_voice_is_nearest_to_itself(name: str, tenant_a: TenantCtx, joe: Voice, kokoro: Voice) -> None:
    encoder = speaker_encoder(name)
    first, rate = joe_pcm(tenant_a, "The harbour was quiet that morning, and the gulls argued over scraps.")
    second, _ = joe_pcm(tenant_a, "Dear Margaret, thank you for your letter, it arrived on a rainy Tuesday.")
    joe_a, joe_b = encoder.embed(first, rate), encoder.embed(second, rate)
    assert joe_a.shape == (256,) and abs(float(np.linalg.norm(joe_a)) - 1) < 1e-4
    others = [encoder.embed(_kokoro_pcm(tenant_a, v), 24000) for v in ("am_adam", "af_heart")]
    same = similarity(joe_a, joe_b)
    assert same > max(similarity(joe_a, other) for other in others), (name, same)
