"""The official elevenlabs SDK's ``voices.ivc.create``, unchanged, against a live daphne: a
recording of the joe Piper voice becomes a ``matched`` voice that the SDK then speaks with."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import make_joe, make_kokoro, make_tenant
from tests.matching.recordings import joe_wav
from tests.servers import ServerProc
from tts.models import Voice, VoiceMatch

pytestmark = pytest.mark.django_db(transaction=True)

# The smallest search: the SDK is what this test is about (tests/matching/test_voice_add.py searches blends).
SMALL_SEARCH = {"TTS_MATCH_MAX_CANDIDATES": "1", "TTS_MATCH_BLEND_TOP_K": "0", "TTS_JOB_RUNNER": "thread"}


def test_the_elevenlabs_sdk_adds_a_matched_voice(daphne_factory: Callable[..., ServerProc], kokoro_dir: str) -> None:
    from elevenlabs.client import ElevenLabs
    from elevenlabs.core.api_error import ApiError

    make_joe()
    make_kokoro(kokoro_dir)
    ctx = make_tenant("sdk-match")
    recording = joe_wav(ctx)
    server = daphne_factory(SMALL_SEARCH)
    client = ElevenLabs(api_key=ctx.key, base_url=server.url)

    with pytest.raises(ApiError) as refused:
        client.voices.ivc.create(name="Joe-like", files=[("joe.wav", recording, "audio/wav")])
    assert refused.value.status_code == 400 and "consent" in str(refused.value.body)

    added = client.voices.ivc.create(
        name="Joe-like",
        files=[("joe.wav", recording, "audio/wav")],
        description="matched from joe",
        labels={"language": "en"},
        request_options={"additional_body_parameters": {"consent": "true"}},
    )
    assert added.requires_verification is False and added.voice_id.startswith("match-")

    deadline = time.monotonic() + 120
    state: dict = {}
    while time.monotonic() < deadline:
        state = httpx.get(f"{server.url}/v1/voices/{added.voice_id}/match", headers={"xi-api-key": ctx.key}).json()
        if state["status"] in ("succeeded", "failed"):
            break
        time.sleep(0.5)
    assert state["status"] == "succeeded", (state, server.log())
    assert state["candidates_total"] == 1 and state["similarity"] >= state["nearest_similarity"]

    voice = client.voices.get(added.voice_id)
    assert voice.category == "matched" and voice.labels["nearest_voice"] == state["nearest_voice_id"]
    audio = b"".join(
        client.text_to_speech.convert(
            voice_id=added.voice_id, text="Good morning, this is a matched voice.", output_format="pcm_16000"
        )
    )
    samples, rate = decode_audio(audio, "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000)
    assert Voice.objects.get(voice_id=added.voice_id).tenant == ctx.tenant
    assert VoiceMatch.objects.get(voice_id=added.voice_id).recording_deleted_at is not None
