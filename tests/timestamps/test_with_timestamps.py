"""POST /v1/text-to-speech/{voice_id}/with-timestamps: timings checked against the audio itself."""

from __future__ import annotations

import base64
import itertools
import json
from pathlib import Path

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import ModelVersion, SynthesisRecord, Voice

from .timing_checks import alignment_words, longest_quiet_gap

URL = "/v1/text-to-speech/joe/with-timestamps?output_format=pcm_22050"
TEXT = "Dr. Smith paid $3.50 on 1/2/2024 at 10:30am. The harbour was quiet that morning"


def _post(ctx: TenantCtx, text: str, **extra: object) -> dict:
    response = ctx.client().post(URL, {"text": text, **extra}, format="json")
    assert response.status_code == 200, response.content
    assert response["content-type"] == "application/json"
    return {**response.json(), "history_item_id": response["history-item-id"]}


def test_it_times_every_character_of_the_original_and_normalized_text(tenant_a: TenantCtx, joe_timed: Voice) -> None:
    body = _post(tenant_a, TEXT)
    samples, rate = decode_audio(base64.b64decode(body["audio_base64"]), "pcm_22050")
    assert_speech(samples, rate, expected_rate=22050)
    duration = len(samples) / rate

    original = body["alignment"]
    assert "".join(original["characters"]) == TEXT
    normalized = body["normalized_alignment"]
    spoken = "".join(normalized["characters"])
    assert "Doctor Smith paid three dollars and fifty cents" in spoken

    for track in (original, normalized):
        starts = track["character_start_times_seconds"]
        ends = track["character_end_times_seconds"]
        assert all(s <= e for s, e in zip(starts, ends, strict=True))
        assert starts == sorted(starts) and ends == sorted(ends)
        words = alignment_words(track)
        word_starts = [start for _, start, _ in words]
        assert all(a < b for a, b in itertools.pairwise(word_starts)), words
        assert abs(ends[-1] - duration) <= 0.05, (ends[-1], duration)


def test_it_places_the_words_where_the_audio_is_loud(tenant_a: TenantCtx, joe_timed: Voice) -> None:
    body = _post(tenant_a, "Hello there. Good morning to you all.")
    samples, rate = decode_audio(base64.b64decode(body["audio_base64"]), "pcm_22050")
    words = alignment_words(body["normalized_alignment"])
    assert [w for w, _, _ in words] == ["Hello", "there", "Good", "morning", "to", "you", "all"]
    gap_start, gap_end = longest_quiet_gap(samples, rate)
    # The pause between the sentences lies between "there" and "Good" in the timings too.
    there_end, good_start = words[1][2], words[2][1]
    assert there_end <= gap_start + 0.08 and good_start >= gap_end - 0.08, (words, gap_start, gap_end)


def _break_gaps(ctx: TenantCtx, ssml: str) -> tuple[float, float]:
    body = _post(ctx, ssml)
    samples, rate = decode_audio(base64.b64decode(body["audio_base64"]), "pcm_22050")
    words = {w: (s, e) for w, s, e in alignment_words(body["normalized_alignment"])}
    audio_gap = longest_quiet_gap(samples, rate)
    return words["General"][0] - words["there"][1], audio_gap[1] - audio_gap[0]


@pytest.fixture
def steady_joe(joe_timed: Voice, tmp_path: Path) -> Voice:
    """joe with the duration noise off: the same text gets the same phoneme lengths every
    time, so two syntheses differ only by what the request changed."""
    version = ModelVersion.objects.get(model_id=joe_timed.model_id)
    config = json.loads(Path(version.config_path).read_text(encoding="utf-8"))
    config["inference"]["noise_w"] = 0.0
    steady = tmp_path / "steady.onnx.json"
    steady.write_text(json.dumps(config), encoding="utf-8")
    version.config_path = str(steady)
    version.sha256 = f"{version.sha256[:56]}steady00"  # another engine than joe_timed's in the registry
    version.save(update_fields=["config_path", "sha256"])
    return joe_timed


def test_it_shows_a_break_as_a_gap_in_audio_and_timestamps(tenant_a: TenantCtx, steady_joe: Voice) -> None:
    plain_ts, plain_audio = _break_gaps(tenant_a, "<speak>Hello there. General Kenobi.</speak>")
    paused_ts, paused_audio = _break_gaps(tenant_a, '<speak>Hello there.<break time="500ms"/> General Kenobi.</speak>')
    assert paused_ts - plain_ts == pytest.approx(0.5, abs=0.03), (plain_ts, paused_ts)
    assert paused_audio - plain_audio == pytest.approx(0.5, abs=0.03), (plain_audio, paused_audio)
    # And the timings put the pause where the audio has it.
    assert paused_ts == pytest.approx(paused_audio, abs=0.1), (paused_ts, paused_audio)


def test_it_keeps_the_alignment_in_the_history_item(tenant_a: TenantCtx, joe_timed: Voice) -> None:
    body = _post(tenant_a, "Keep these timings.")
    record = SynthesisRecord.objects.get(pk=body["history_item_id"])
    assert record.status == "success"
    assert record.alignment == {"alignment": body["alignment"], "normalized_alignment": body["normalized_alignment"]}


def test_it_keeps_no_alignment_when_logging_is_off(tenant_a: TenantCtx, joe_timed: Voice) -> None:
    response = tenant_a.client().post(f"{URL}&enable_logging=false", {"text": "Private words."}, format="json")
    assert response.status_code == 200
    assert response.json()["alignment"]["characters"]  # the caller still gets them
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    assert record.alignment is None and record.text == ""


def test_it_serves_the_same_timings_from_the_cache(tenant_a: TenantCtx, joe_timed: Voice) -> None:
    first = _post(tenant_a, "Say it twice.")
    second = _post(tenant_a, "Say it twice.")
    assert SynthesisRecord.objects.get(pk=second["history_item_id"]).cache_hit
    assert second["alignment"] == first["alignment"]
    assert second["audio_base64"] == first["audio_base64"]


def test_it_estimates_timings_for_a_model_without_durations(tenant_a: TenantCtx, joe: Voice) -> None:
    body = _post(tenant_a, "No durations here.")
    samples, rate = decode_audio(base64.b64decode(body["audio_base64"]), "pcm_22050")
    ends = body["alignment"]["character_end_times_seconds"]
    assert "".join(body["alignment"]["characters"]) == "No durations here."
    assert abs(ends[-1] - len(samples) / rate) <= 0.05


def test_it_refuses_bad_input_in_the_elevenlabs_dialect(tenant_a: TenantCtx, joe_timed: Voice) -> None:
    response = tenant_a.client().post(URL, {"text": ""}, format="json")
    assert response.status_code == 400
    assert response.json()["detail"]["status"] == "empty_text"
    response = tenant_a.client().post(URL.replace("joe", "nobody"), {"text": "Hi."}, format="json")
    assert response.status_code == 404


def test_it_hides_voices_of_other_tenants(tenant_a: TenantCtx, tenant_b: TenantCtx, joe_timed: Voice) -> None:
    joe_timed.tenant = tenant_b.tenant
    joe_timed.save(update_fields=["tenant"])
    response = tenant_a.client().post(URL, {"text": "Not mine."}, format="json")
    assert response.status_code == 404
    assert not SynthesisRecord.objects.filter(tenant=tenant_a.tenant).exists()


def test_it_streams_timed_chunks_as_ndjson(tenant_a: TenantCtx, joe_timed: Voice) -> None:
    text = "First sentence here. Second one follows. And a third."
    response = tenant_a.client().post(
        "/v1/text-to-speech/joe/stream/with-timestamps?output_format=pcm_16000", {"text": text}, format="json"
    )
    assert response.status_code == 200
    assert response["content-type"] == "application/x-ndjson"
    lines = b"".join(response.streaming_content).decode().splitlines()
    chunks = [json.loads(line) for line in lines]
    assert len(chunks) >= 3
    audio = b"".join(base64.b64decode(c["audio_base64"]) for c in chunks)
    samples, rate = decode_audio(audio, "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text=text)
    chars = [ch for c in chunks if c["alignment"] for ch in c["alignment"]["characters"]]
    starts = [t for c in chunks if c["alignment"] for t in c["alignment"]["character_start_times_seconds"]]
    assert "".join(chars) == text and starts == sorted(starts)
    # Later chunks start later: absolute times, not per chunk.
    assert chunks[1]["alignment"]["character_start_times_seconds"][0] > 0.5
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    assert record.status == "success" and record.alignment["alignment"]["characters"] == chars
