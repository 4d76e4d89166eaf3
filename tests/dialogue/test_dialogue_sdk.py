"""The official elevenlabs SDK's text_to_dialogue, unchanged, against a live daphne server."""

from __future__ import annotations

import base64

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import make_joe, make_tenant
from tts.models import SynthesisRecord, Voice

FIRST = "Is the harbour open today?"
SECOND = "Yes, the boats left at dawn."

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_elevenlabs_sdk_speaks_a_dialogue(live_server_url: str) -> None:
    from elevenlabs import DialogueInput
    from elevenlabs.client import ElevenLabs

    _, joe = make_joe()
    Voice.objects.create(voice_id="joe2", name="Joe Two", language="en", model_id=joe.model_id)
    ctx = make_tenant("sdk-dialogue")
    client = ElevenLabs(api_key=ctx.key, base_url=live_server_url)
    inputs = [DialogueInput(text=FIRST, voice_id="joe"), DialogueInput(text=SECOND, voice_id="joe2")]

    audio = b"".join(client.text_to_dialogue.convert(inputs=inputs, output_format="pcm_16000", seed=4))
    samples, rate = decode_audio(audio, "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text=f"{FIRST} {SECOND}", tolerance=0.6)
    record = SynthesisRecord.objects.get(tenant=ctx.tenant)
    assert record.characters == len(FIRST) + len(SECOND) and record.status == "success"

    timed = client.text_to_dialogue.convert_with_timestamps(inputs=inputs, output_format="pcm_16000")
    samples, rate = decode_audio(base64.b64decode(timed.audio_base_64), "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text=f"{FIRST} {SECOND}", tolerance=0.6)
    segments = timed.voice_segments
    assert [(s.voice_id, s.dialogue_input_index) for s in segments] == [("joe", 0), ("joe2", 1)]
    assert timed.alignment is not None
    text = "".join(timed.alignment.characters)
    assert text[segments[1].character_start_index : segments[1].character_end_index] == SECOND
    assert segments[0].end_time_seconds <= segments[1].start_time_seconds < segments[1].end_time_seconds

    streamed = b"".join(client.text_to_dialogue.stream(inputs=inputs, output_format="pcm_16000"))
    assert_speech(*decode_audio(streamed, "pcm_16000"), expected_rate=16000, text=f"{FIRST} {SECOND}", tolerance=0.6)

    chunks = list(client.text_to_dialogue.stream_with_timestamps(inputs=inputs, output_format="pcm_16000"))
    streamed = b"".join(base64.b64decode(chunk.audio_base_64) for chunk in chunks)
    assert_speech(*decode_audio(streamed, "pcm_16000"), expected_rate=16000, text=f"{FIRST} {SECOND}", tolerance=0.6)
    assert {s.dialogue_input_index for chunk in chunks for s in chunk.voice_segments} == {0, 1}
    assert SynthesisRecord.objects.filter(tenant=ctx.tenant, status="success").count() == 4
