"""A matched voice speaks on the ways in besides whole-file REST (test_voice_add.py covers that and
OpenAI's route): the HTTP stream, the stream-input WebSocket and Wyoming, each run in this process as
tests/pipeline/test_every_way_in.py runs them (its helpers are reused). The voice is made here as a
match saves it (a tenant's Kokoro blend labelled ``matched``), without running a search.

Each way must answer speech (it decodes, at Kokoro's 24 kHz, as long as the text, not silence) and
write one history item in the matched voice's name."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest
from asgiref.sync import async_to_sync
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.tts import Synthesize, SynthesizeVoice

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.pipeline.test_every_way_in import body_of, converse, exchange, settled
from tts.matching.search import Candidate
from tts.models import SynthesisRecord, Voice

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "Good morning. This voice was matched from a recording."
RATE = 24000  # Kokoro's


@pytest.fixture
def matched(tenant_a: TenantCtx, kokoro: Voice) -> Voice:
    """A matched voice as ``tts.matching.actions`` saves one: am_adam(0.7)+bm_lewis(0.3), tenant a's."""
    adam, lewis = Voice.objects.get(voice_id="am_adam"), Voice.objects.get(voice_id="bm_lewis")
    best = Candidate(((adam, 0.7), (lewis, 0.3)))
    voice = Voice.objects.create(
        voice_id="match-0123456789ab",
        name="Matched narrator",
        language="en",
        labels={
            "language": "en",
            "engine": "kokoro",
            "category": "matched",
            "matched_to": best.spelled(),
            "nearest_voice": "am_adam",
            "similarity": "0.612",
        },
        model_id=adam.model_id,
        speaker_index=adam.speaker_index,
        blend=best.blend_json(),
        tenant=tenant_a.tenant,
    )
    assert voice.category == "matched" and len(voice.style_blend) == 2
    return voice


def rest_stream(ctx: TenantCtx, voice_id: str) -> tuple[np.ndarray, int]:
    response = ctx.client().post(
        f"/v1/text-to-speech/{voice_id}/stream?output_format=pcm_{RATE}", {"text": TEXT}, format="json"
    )
    assert response.status_code == 200 and response.streaming, body_of(response)[:500]
    return decode_audio(body_of(response), f"pcm_{RATE}")


def stream_input(ctx: TenantCtx, voice_id: str) -> tuple[np.ndarray, int]:
    path = f"/v1/text-to-speech/{voice_id}/stream-input?output_format=pcm_{RATE}"
    messages = [{"text": " "}, {"text": TEXT, "flush": True}, {"text": ""}]
    received, audio, close = async_to_sync(converse)(path, ctx.key, messages)
    assert close == 1000 and received[-1].get("isFinal"), json.dumps(received[-3:])[:500]
    assert not [m for m in received if m.get("error")], received
    return decode_audio(audio, f"pcm_{RATE}")


def wyoming(ctx: TenantCtx, voice_id: str) -> tuple[np.ndarray, int]:
    events = [Synthesize(text=TEXT, voice=SynthesizeVoice(name=voice_id)).event()]
    received = async_to_sync(exchange)(ctx.key, events, lambda e: AudioStop.is_type(e.type))
    assert AudioStop.is_type(received[-1].type), [e.type for e in received]
    start = next(AudioStart.from_event(e) for e in received if AudioStart.is_type(e.type))
    pcm = b"".join(AudioChunk.from_event(e).audio for e in received if AudioChunk.is_type(e.type))
    assert start.width == 2 and start.channels == 1
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0, start.rate


WAYS: dict[str, Callable[[TenantCtx, str], tuple[np.ndarray, int]]] = {
    "rest-stream": rest_stream,
    "stream-input": stream_input,
    "wyoming": wyoming,
}


@pytest.mark.parametrize("way", list(WAYS))
def test_a_matched_voice_speaks_on_every_way_in(way: str, tenant_a: TenantCtx, matched: Voice) -> None:
    samples, rate = WAYS[way](tenant_a, matched.voice_id)
    assert_speech(samples, rate, expected_rate=RATE, text=TEXT)
    record = settled(SynthesisRecord.objects.get(tenant=tenant_a.tenant).pk)
    assert record.status == SynthesisRecord.Status.SUCCESS and record.voice_id == matched.voice_id, record
