"""Recordings for the matching tests: speech of the joe Piper voice, made by the platform itself."""

from __future__ import annotations

import numpy as np

from tests.audio_checks import decode_audio
from tests.fixtures import TenantCtx
from tts.matching import wav_bytes

JOE_TEXT = (
    "The harbour was quiet that morning, and the gulls argued over scraps near the market. "
    "A fisherman mended his nets while the tide came slowly in."
)


def joe_pcm(ctx: TenantCtx, text: str = JOE_TEXT) -> tuple[np.ndarray, int]:
    response = ctx.client().post("/v1/text-to-speech/joe?output_format=pcm_22050", {"text": text}, format="json")
    assert response.status_code == 200, response.content
    return decode_audio(response.content, "pcm_22050")


def joe_wav(ctx: TenantCtx, text: str = JOE_TEXT) -> bytes:
    return wav_bytes(*joe_pcm(ctx, text))
