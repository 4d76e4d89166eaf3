"""The official elevenlabs and openai SDKs, unchanged, against a live daphne server."""

from __future__ import annotations

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import make_joe, make_tenant
from tts.models import SynthesisRecord

TEXT = "The harbour was quiet that morning, and the gulls argued over scraps near the market."

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_serves_the_elevenlabs_sdk(live_server_url: str) -> None:
    from elevenlabs.client import ElevenLabs

    make_joe()
    ctx = make_tenant("sdk-eleven")
    client = ElevenLabs(api_key=ctx.key, base_url=live_server_url)

    voices = client.voices.get_all()
    assert [v.voice_id for v in voices.voices] == ["joe"]
    models = client.models.list()
    assert models[0].model_id == "en_US-joe-medium"

    for output_format, rate in (("mp3_44100_128", 44100), ("pcm_16000", 16000)):
        audio = b"".join(client.text_to_speech.convert(
            voice_id="joe", text=TEXT, model_id="eleven_multilingual_v2", output_format=output_format,
        ))
        samples, got = decode_audio(audio, output_format)
        assert_speech(samples, got, expected_rate=rate, text=TEXT)

    history = client.history.list(page_size=10)
    assert len(history.history) == 2 and history.history[0].text == TEXT
    item_id = history.history[0].history_item_id
    stored = b"".join(client.history.get_audio(item_id))
    samples, got = decode_audio(stored, "pcm_16000")
    assert_speech(samples, got, expected_rate=16000, text=TEXT)

    subscription = client.user.subscription.get()
    assert subscription.character_count == 2 * len(TEXT)
    assert SynthesisRecord.objects.filter(tenant=ctx.tenant, status="success").count() == 2


def test_it_serves_the_openai_sdk(live_server_url: str) -> None:
    import openai

    make_joe()
    ctx = make_tenant("sdk-openai")
    client = openai.OpenAI(api_key=ctx.key, base_url=f"{live_server_url}/v1")
    for fmt, rate in (("mp3", 24000), ("wav", 24000), ("flac", 24000), ("pcm", 24000)):
        response = client.audio.speech.create(model="tts-1", voice="alloy", input=TEXT, response_format=fmt)
        samples, got = decode_audio(response.content, fmt)
        assert_speech(samples, got, expected_rate=rate, text=TEXT)
    with pytest.raises(openai.BadRequestError) as exc:
        client.audio.speech.create(model="tts-1", voice="alloy", input="", response_format="mp3")
    assert exc.value.body["param"] == "input"
    bad = openai.OpenAI(api_key="tts_000000000000_nope", base_url=f"{live_server_url}/v1")
    with pytest.raises(openai.AuthenticationError):
        bad.audio.speech.create(model="tts-1", voice="alloy", input="Hi")
