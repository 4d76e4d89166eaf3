"""POST /v1/voices/add: a recording matched to the nearest Kokoro voice or blend, as a tenant's
``matched`` voice that speaks on every route; consent, the files' 400s, the recording's retention."""

from __future__ import annotations

import io
import json
import os
from datetime import timedelta

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.matching.recordings import joe_wav
from tts.matching import DESCRIPTION_CHARS, recording_dir, recordings_purge, voice_match_run, wav_bytes
from tts.models import Voice, VoiceMatch


@pytest.fixture(autouse=True)
def small_search(settings) -> None:  # type: ignore[no-untyped-def]
    settings.TTS_MATCH_MAX_CANDIDATES = 3
    settings.TTS_MATCH_BLEND_TOP_K = 2
    settings.TTS_MATCH_RECORDING_RETENTION_S = 0


def upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def add(ctx: TenantCtx, files: list[SimpleUploadedFile], **fields: str):  # type: ignore[no-untyped-def]
    body = {"name": "My match", "consent": "true", **fields, "files": files}
    return ctx.client().post("/v1/voices/add", body, format="multipart")


def test_it_matches_a_recording_to_a_voice_that_speaks(
    tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice, kokoro: Voice
) -> None:
    response = add(tenant_a, [upload("joe.wav", joe_wav(tenant_a))], labels='{"language": "en"}')
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["requires_verification"] is False and body["status"] == "queued"
    voice_id = body["voice_id"]
    match = VoiceMatch.objects.get(voice_id=voice_id)
    folder = recording_dir(match.pk)
    assert sorted(os.listdir(folder)) == ["recording-00.wav"]

    assert voice_match_run(match.pk) == "succeeded"
    assert voice_match_run(match.pk) == "skipped"  # a redelivered task does nothing
    state = tenant_a.client().get(f"/v1/voices/{voice_id}/match").json()
    assert state["status"] == "succeeded" and state["progress"] == 1.0 and state["category"] == "matched"
    # 3 voices, then blends of the best 2 at three weights.
    assert state["candidates_done"] == state["candidates_total"] == 6
    assert -1 <= state["nearest_similarity"] <= state["similarity"] <= 1
    assert state["engine_seconds"] > 0 and state["recording_deleted"] is True
    assert not folder.exists()
    match.refresh_from_db()
    assert len(match.embedding) == 256 and match.encoder == "dvector"

    voice = Voice.objects.get(voice_id=voice_id)
    assert voice.tenant == tenant_a.tenant and voice.category == "matched"
    assert voice.labels["nearest_voice"] == state["nearest_voice_id"]
    detail = tenant_a.client().get(f"/v1/voices/{voice_id}").json()
    assert detail["category"] == "matched"
    speech = tenant_a.client().post(
        f"/v1/text-to-speech/{voice_id}?output_format=pcm_24000", {"text": "Hello there, how are you?"}, format="json"
    )
    assert speech.status_code == 200, speech.content
    samples, rate = decode_audio(speech.content, "pcm_24000")
    assert_speech(samples, rate, expected_rate=24000)
    openai = tenant_a.client().post(
        "/v1/audio/speech",
        {"model": "tts-1", "input": "Hello again.", "voice": voice_id, "response_format": "pcm"},
        format="json",
    )
    assert openai.status_code == 200, openai.content
    assert_speech(*decode_audio(openai.content, "pcm_24000"), expected_rate=24000)
    searched = tenant_a.client().get("/v2/voices?category=matched").json()
    assert [v["voice_id"] for v in searched["voices"]] == [voice_id]
    professional = tenant_a.client().get("/v2/voices?category=professional").json()
    assert voice_id not in [v["voice_id"] for v in professional["voices"]]

    # Another tenant sees neither the match nor the voice.
    assert tenant_b.client().get(f"/v1/voices/{voice_id}/match").status_code == 404
    other = tenant_b.client().post(f"/v1/text-to-speech/{voice_id}", {"text": "Hello."}, format="json")
    assert other.status_code == 404


def test_it_refuses_without_consent(tenant_a: TenantCtx, joe: Voice, kokoro: Voice) -> None:
    data = joe_wav(tenant_a, "A short sentence of speech for the test.")
    for consent in ({}, {"consent": "false"}):
        body = {"name": "No consent", "files": [upload("joe.wav", data)], **consent}
        response = tenant_a.client().post("/v1/voices/add", body, format="multipart")
        assert response.status_code == 400
        detail = response.json()["detail"]
        assert "consent" in detail["message"] and detail["status"] == "consent_required"
    assert not VoiceMatch.objects.exists()
    # The header is the other way to say it (a client that cannot add form fields).
    response = tenant_a.client().post(
        "/v1/voices/add",
        {"name": "Header consent", "files": [upload("joe.wav", data)]},
        format="multipart",
        HTTP_X_VOICE_CONSENT="true",
    )
    assert response.status_code == 200, response.content


def _noise(seconds: float, rate: int = 16000, level: float = 0.1) -> np.ndarray:
    return (np.random.default_rng(1).standard_normal(int(seconds * rate)) * level).astype(np.float32)


@pytest.mark.parametrize(
    ("name", "make", "words"),
    [
        ("notes.txt", lambda: b"this is not audio at all", "not audio"),
        ("silent.wav", lambda: wav_bytes(np.zeros(16000 * 3, np.float32), 16000), "silent"),
        ("short.wav", lambda: wav_bytes(_noise(0.4), 16000), "too short"),
        ("long.wav", lambda: wav_bytes(_noise(4.0), 16000), "too long"),
        ("big.wav", lambda: wav_bytes(_noise(2.0, 48000), 48000), "bytes"),
        ("broken.wav", lambda: b"RIFF\x24\x00\x00\x00WAVEjunk" + bytes(range(256)) * 4, "could not be decoded"),
    ],
)
def test_it_answers_400_naming_a_bad_file(tenant_a: TenantCtx, settings, name, make, words) -> None:  # type: ignore[no-untyped-def]
    settings.TTS_MATCH_MAX_TOTAL_SECONDS = 5.0
    settings.TTS_MATCH_MAX_FILE_BYTES = 150_000
    good = upload("good.wav", wav_bytes(_noise(2.0), 16000))
    response = add(tenant_a, [good, upload(name, make())])
    assert response.status_code == 400, response.content
    message = response.json()["detail"]["message"]
    assert f"'{name}'" in message and words in message, message
    assert not VoiceMatch.objects.exists()


def test_it_bounds_the_labels_it_keeps(tenant_a: TenantCtx) -> None:
    files = [upload("a.wav", wav_bytes(_noise(1.5), 16000))]
    for labels in ({"accent": "x" * 201}, {"k" * 65: "v"}, {str(i): "v" for i in range(21)}):
        body = {"name": "Labelled", "files": files, "consent": "true", "labels": json.dumps(labels)}
        response = tenant_a.client().post("/v1/voices/add", body, format="multipart")
        assert response.status_code == 400, response.content
        assert response.json()["detail"]["param"] == "labels", response.json()
    assert not VoiceMatch.objects.exists()


def test_it_refuses_a_description_past_its_bound(tenant_a: TenantCtx) -> None:
    files = lambda: [upload("a.wav", wav_bytes(_noise(1.5), 16000))]  # noqa: E731
    response = add(tenant_a, files(), description="d" * (DESCRIPTION_CHARS + 1))
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert detail["param"] == "description" and f"at most {DESCRIPTION_CHARS}" in detail["message"], detail
    assert not VoiceMatch.objects.exists()
    # At the bound it passes (to the next check: no Kokoro is served here), not cut short.
    assert add(tenant_a, files(), description="d" * DESCRIPTION_CHARS).status_code == 503


def test_it_bounds_the_number_of_files(tenant_a: TenantCtx, settings) -> None:  # type: ignore[no-untyped-def]
    settings.TTS_MATCH_MAX_FILES = 2
    files = [upload(f"{i}.wav", wav_bytes(_noise(1.5), 16000)) for i in range(3)]
    response = add(tenant_a, files)
    assert response.status_code == 400 and "at most 2 files" in response.json()["detail"]["message"]
    assert add(tenant_a, []).status_code == 400


def test_it_reads_every_format(tenant_a: TenantCtx) -> None:
    import av

    from tts.audio.encode import encode_all
    from tts.audio.formats import parse_elevenlabs_format, parse_openai_format
    from tts.matching.recordings import decode_uploads, sniff_format

    samples = _noise(2.0, 24000)
    made = {
        "a.wav": wav_bytes(samples, 24000),
        "a.mp3": encode_all(samples, 24000, parse_elevenlabs_format("mp3_22050_32")),
        "a.flac": encode_all(samples, 24000, parse_openai_format("flac")),
        "a.ogg": encode_all(samples, 24000, parse_openai_format("opus")),
    }
    out = io.BytesIO()
    with av.open(out, mode="w", format="mp4") as container:
        stream = container.add_stream("aac", rate=24000, layout="mono")
        frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="flt", layout="mono")
        frame.sample_rate = 24000
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    made["a.m4a"] = out.getvalue()
    assert [sniff_format(data[:16]) for data in made.values()] == ["WAV", "MP3", "FLAC", "OGG", "M4A"]
    decoded = decode_uploads([(name, io.BytesIO(data), len(data)) for name, data in made.items()])
    for one in decoded:
        assert abs(one.seconds - 2.0) < 0.15, (one.name, one.seconds)


def test_the_recording_is_deleted_after_its_retention(tenant_a: TenantCtx, joe: Voice, kokoro: Voice, settings) -> None:  # type: ignore[no-untyped-def]
    settings.TTS_MATCH_RECORDING_RETENTION_S = 600
    settings.TTS_MATCH_MAX_CANDIDATES = 1
    response = add(tenant_a, [upload("joe.wav", joe_wav(tenant_a, "Hello, this is a short recording of speech."))])
    match = VoiceMatch.objects.get(voice_id=response.json()["voice_id"])
    assert voice_match_run(match.pk) == "succeeded"
    folder = recording_dir(match.pk)
    assert folder.exists()  # kept for its retention
    assert recordings_purge(now=match.created_at + timedelta(seconds=599)) == 0
    assert recordings_purge(now=match.created_at + timedelta(seconds=601)) == 1
    assert not folder.exists()
    match.refresh_from_db()
    assert match.recording_path == "" and match.recording_deleted_at is not None and len(match.embedding) == 256


def test_it_answers_503_where_no_kokoro_voice_is_served(tenant_a: TenantCtx, joe: Voice) -> None:
    response = add(tenant_a, [upload("a.wav", wav_bytes(_noise(2.0), 16000))])
    assert response.status_code == 503
    assert "Kokoro" in response.json()["detail"]["message"] and not VoiceMatch.objects.exists()
