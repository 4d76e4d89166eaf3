"""The timestamp endpoints through the official ElevenLabs SDK against a live daphne."""

from __future__ import annotations

import base64
import itertools

import httpx
import pytest
from elevenlabs import ElevenLabs

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice

from .timing_checks import alignment_words

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "The harbour was quiet that morning. Fishing boats rocked against the old stone wall. Gulls circled overhead."


def test_it_converts_with_timestamps_through_the_sdk(
    live_server_url: str, tenant_a: TenantCtx, joe_timed: Voice
) -> None:
    client = ElevenLabs(api_key=tenant_a.key, base_url=live_server_url)
    result = client.text_to_speech.convert_with_timestamps("joe", text=TEXT, output_format="mp3_22050_32")
    samples, rate = decode_audio(base64.b64decode(result.audio_base_64), "mp3_22050_32")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    assert result.alignment is not None and result.normalized_alignment is not None
    assert "".join(result.alignment.characters) == TEXT
    ends = result.alignment.character_end_times_seconds
    # mp3 adds encoder padding at the ends; the timings follow the synthesized samples.
    assert abs(ends[-1] - len(samples) / rate) <= 0.08
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.status == "success"
    assert record.alignment["alignment"]["characters"] == list(TEXT)


def test_it_streams_with_timestamps_through_the_sdk(
    live_server_url: str, tenant_a: TenantCtx, joe_timed: Voice
) -> None:
    client = ElevenLabs(api_key=tenant_a.key, base_url=live_server_url)
    chunks = list(client.text_to_speech.stream_with_timestamps("joe", text=TEXT, output_format="pcm_22050"))
    assert len(chunks) >= 3  # one per sentence at least: it streams
    audio = b"".join(base64.b64decode(chunk.audio_base_64) for chunk in chunks)
    samples, rate = decode_audio(audio, "pcm_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)

    # The chunks' alignments, joined, are the whole text with times absolute from the start.
    characters: list[str] = []
    starts: list[float] = []
    ends: list[float] = []
    for chunk in chunks:
        if chunk.alignment is not None:
            characters += chunk.alignment.characters
            starts += chunk.alignment.character_start_times_seconds
            ends += chunk.alignment.character_end_times_seconds
    assert "".join(characters) == TEXT
    assert starts == sorted(starts)
    word_starts = [
        s
        for _, s, _ in alignment_words(
            {
                "characters": characters,
                "character_start_times_seconds": starts,
                "character_end_times_seconds": ends,
            }
        )
    ]
    assert all(a < b for a, b in itertools.pairwise(word_starts))
    assert abs(ends[-1] - len(samples) / rate) <= 0.05

    # Same timings as the stored history item, and as the non-streamed endpoint's shape.
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant, source="elevenlabs_stream")
    assert record.status == "success"
    assert record.alignment["alignment"]["characters"] == characters


def test_it_answers_errors_before_the_stream_starts(
    live_server_url: str, tenant_a: TenantCtx, joe_timed: Voice
) -> None:
    response = httpx.post(
        f"{live_server_url}/v1/text-to-speech/nobody/stream/with-timestamps",
        json={"text": "Hello."},
        headers={"xi-api-key": tenant_a.key},
        timeout=30,
    )
    assert response.status_code == 404
    assert response.json()["detail"]["status"] == "voice_not_found"
    assert not SynthesisRecord.objects.exists()
