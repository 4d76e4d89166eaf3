"""Kokoro's voices in every language the model reads: one short sentence each through the REST path
(language detection -> the language's front end -> the shared Kokoro engine), and a voice reading a
language other than its own."""

from __future__ import annotations

import base64

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice

# (voice, sentence): one short sentence per language, in that language's own voice.
SENTENCES = {
    "en": ("af_heart", "The harbour is quiet tonight."),
    "es": ("ef_dora", "El puerto está tranquilo esta noche."),
    "fr": ("ff_siwis", "Le port est calme ce soir."),
    "hi": ("hf_alpha", "आज रात बंदरगाह शांत है।"),
    "it": ("if_sara", "Il porto è tranquillo stasera."),
    "pt": ("pf_dora", "O porto está calmo esta noite."),
}


@pytest.mark.parametrize("language", sorted(SENTENCES))
def test_each_language_is_spoken_by_its_voice(tenant_a: TenantCtx, kokoro: Voice, language: str) -> None:
    voice_id, text = SENTENCES[language]
    response = tenant_a.client().post(
        f"/v1/text-to-speech/{voice_id}/with-timestamps?output_format=pcm_24000", {"text": text}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    samples, rate = decode_audio(base64.b64decode(body["audio_base64"]), "pcm_24000")
    assert_speech(samples, rate, expected_rate=24000, text=text, ms_per_char=75, tolerance=0.6)
    # The model's durations placed on the text's own words: the last word ends near the audio's end.
    ends = body["alignment"]["character_end_times_seconds"]
    assert "".join(body["alignment"]["characters"]) == text
    assert ends == sorted(ends) and abs(ends[-1] - len(samples) / rate) < 0.5
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    assert record.status == "success" and record.voice_id == voice_id


def test_a_voice_reads_another_language_through_that_languages_front_end(tenant_a: TenantCtx, kokoro: Voice) -> None:
    """A Japanese voice given Spanish text reads it as Spanish (the accent is the voice's): the phonemes
    are the Spanish front end's, so the words take Spanish time, not Japanese letter names."""
    text = "Buenos días, amigos."
    client = tenant_a.client()
    detected = client.post("/v1/text-to-speech/jm_kumo?output_format=pcm_24000", {"text": text}, format="json")
    named = client.post(
        "/v1/text-to-speech/jm_kumo?output_format=pcm_24000", {"text": text, "language_code": "es"}, format="json"
    )
    assert detected.status_code == named.status_code == 200
    samples, rate = decode_audio(detected.content, "pcm_24000")
    assert_speech(samples, rate, expected_rate=24000, text=text, ms_per_char=75, tolerance=0.6)
    assert detected.content == named.content  # detection chose Spanish, as language_code does


def test_a_language_the_model_does_not_read_is_refused_naming_the_field(tenant_a: TenantCtx, kokoro: Voice) -> None:
    response = tenant_a.client().post(
        "/v1/text-to-speech/af_heart", {"text": "Hallo zusammen.", "language_code": "de"}, format="json"
    )
    assert response.status_code == 422
    assert response.json()["detail"]["param"] == "language_code"
