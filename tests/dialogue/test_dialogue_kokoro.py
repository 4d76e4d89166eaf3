"""A dialogue of two Kokoro voices in two languages: each turn in its own voice (style vector) and
the language its voice speaks, on the one engine session of their model."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx, make_kokoro
from tts.models import SynthesisRecord

ENGLISH = "Good morning, how are you?"
JAPANESE = "元気です。"


def test_each_turn_speaks_its_voice_and_its_language(
    tenant_a: TenantCtx, kokoro_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tts.synthesis.stages import engine as engine_stage

    voices = {voice.voice_id: voice for voice in make_kokoro(kokoro_dir)}
    heart, alpha = voices["af_heart"], voices["jf_alpha"]
    original = engine_stage.segment_params
    made: list[tuple[int, str | None]] = []

    def spy(engine: Any, segment: Any, *, speaker_index: int, **knobs: Any) -> Any:
        made.append((speaker_index, segment.language))
        return original(engine, segment, speaker_index=speaker_index, **knobs)

    monkeypatch.setattr(engine_stage, "segment_params", spy)
    inputs = [{"text": ENGLISH, "voice_id": "af_heart"}, {"text": JAPANESE, "voice_id": "jf_alpha"}]
    response = tenant_a.client().post(
        "/v1/text-to-dialogue/with-timestamps?output_format=pcm_24000", {"inputs": inputs}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    samples, rate = decode_audio(base64.b64decode(body["audio_base64"]), "pcm_24000")
    assert_speech(samples, rate, expected_rate=24000)
    assert 1.5 < len(samples) / rate < 6.0
    assert made == [(heart.speaker_index, "en"), (alpha.speaker_index, "ja")]
    segments = body["voice_segments"]
    assert [(s["voice_id"], s["dialogue_input_index"]) for s in segments] == [("af_heart", 0), ("jf_alpha", 1)]
    assert segments[0]["end_time_seconds"] <= segments[1]["start_time_seconds"]
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.characters == len(ENGLISH) + len(JAPANESE) and record.voice_id == "af_heart"
