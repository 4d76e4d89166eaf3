"""Every engine call is within TTS_SEGMENT_MAX_CHARS, phoneme blocks included: a request whose
text is one long ``[[ phonemes ]]`` block is spoken in bounded pieces, through the real engine."""

# IPA letters look like Latin ones on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.inference.piper_onnx import PiperOnnxEngine
from tts.models import SynthesisRecord, Voice

pytestmark = pytest.mark.django_db

WORDS = ["hɛˈloʊ", "ˈwɜːld", "ðə", "ˈkwɪk", "bɹaʊn", "fɑks", "ˈdʒʌmps", "ˈoʊvɚ"]


@override_settings(TTS_SEGMENT_MAX_CHARS=60, TTS_AUDIO_CACHE_ENABLED=False)
def test_a_long_phoneme_block_reaches_the_engine_in_bounded_pieces(
    tenant_a: TenantCtx, joe: Voice, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real = PiperOnnxEngine.phonemize

    def spying(self: PiperOnnxEngine, text: str) -> Any:
        seen.append(text)
        return real(self, text)

    monkeypatch.setattr(PiperOnnxEngine, "phonemize", spying)
    block = "[[ " + " ".join(WORDS[i % len(WORDS)] for i in range(40)) + " ]]"
    assert len(block) > 200
    response = tenant_a.client().post(
        "/v1/text-to-speech/joe?output_format=pcm_16000", {"text": f"Listen. {block}"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert len(seen) >= 4
    assert max(len(text) for text in seen) <= 60
    samples, rate = decode_audio(response.content, "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000)
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    assert record.status == "success"
    assert record.characters == len(f"Listen. {block}")
