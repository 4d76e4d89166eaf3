"""The official elevenlabs and openai SDKs, unchanged, against a live daphne server."""

from __future__ import annotations

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import make_joe, make_tenant
from tts.models import SynthesisRecord, Voice

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
        audio = b"".join(
            client.text_to_speech.convert(
                voice_id="joe",
                text=TEXT,
                model_id="eleven_multilingual_v2",
                output_format=output_format,
            )
        )
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


def test_the_elevenlabs_sdk_searches_voices_and_lists_models(live_server_url: str) -> None:
    from elevenlabs.client import ElevenLabs
    from elevenlabs.core.api_error import ApiError

    make_joe()
    ctx = make_tenant("sdk-search")
    other = make_tenant("sdk-search-other")
    Voice.objects.create(
        voice_id="amy",
        name="Amy",
        language="en-GB",
        model_id="en_US-joe-medium",
        labels={"gender": "female", "accent": "british"},
    )
    Voice.objects.create(voice_id="own", name="Own Voice", model_id="en_US-joe-medium", tenant=ctx.tenant)
    Voice.objects.create(voice_id="theirs", name="Their Voice", model_id="en_US-joe-medium", tenant=other.tenant)
    client = ElevenLabs(api_key=ctx.key, base_url=live_server_url)

    # voices.search, page by page (page_size 2 over three voices: a token, then the last page).
    first = client.voices.search(page_size=2, include_total_count=True)
    assert [v.voice_id for v in first.voices] == ["amy", "joe"]
    assert first.has_more is True and first.total_count == 3 and first.next_page_token
    rest = client.voices.search(page_size=2, next_page_token=first.next_page_token)
    assert [v.voice_id for v in rest.voices] == ["own"] and rest.has_more is False and rest.next_page_token is None
    assert rest.voices[0].is_owner is True and rest.voices[0].category == "professional"
    found = client.voices.search(search="brit", voice_type="default", language=["en"])
    assert [v.voice_id for v in found.voices] == ["amy"] and found.voices[0].labels["accent"] == "british"
    assert [v.voice_id for v in client.voices.search(voice_ids=["theirs", "own", "joe"]).voices] == ["joe", "own"]
    with pytest.raises(ApiError) as exc:
        client.voices.search(page_size=101)
    assert exc.value.status_code == 400 and exc.value.body["detail"]["param"] == "page_size"

    # models.list: the platform's model, then the ElevenLabs ids a request may name, each served by it.
    listed = client.models.list()
    assert listed[0].model_id == "en_US-joe-medium"
    models = {m.model_id: m for m in listed}
    for alias in ("eleven_multilingual_v2", "eleven_flash_v2_5", "eleven_turbo_v2_5"):
        assert models[alias].can_do_text_to_speech is True
        assert [(lang.language_id, lang.name) for lang in models[alias].languages or []] == [("en", "English")]


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
