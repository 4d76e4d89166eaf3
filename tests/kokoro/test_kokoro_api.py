"""Every REST path with a Japanese voice (Kokoro): formats, timestamps over the original
characters, the OpenAI route by voice name, history, cache, language checks, import."""

from __future__ import annotations

import base64
import itertools
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import ModelVersion, SynthesisRecord, Voice

TEXT = "こんにちは。今日は晴れです。"
URL = "/v1/text-to-speech/jf_alpha"


@pytest.mark.parametrize(
    ("output_format", "rate"),
    [
        ("mp3_44100_128", 44100),
        ("pcm_16000", 16000),
        ("pcm_24000", 24000),
        ("wav_22050", 22050),
        ("ulaw_8000", 8000),
        ("opus_48000_64", 48000),
        ("flac_22050", 22050),
    ],
)
def test_it_speaks_japanese_in_each_format(tenant_a: TenantCtx, kokoro: Voice, output_format: str, rate: int) -> None:
    response = tenant_a.client().post(f"{URL}?output_format={output_format}", {"text": TEXT}, format="json")
    assert response.status_code == 200, response.content
    samples, got_rate = decode_audio(response.content, output_format)
    assert_speech(samples, got_rate, expected_rate=rate, text=TEXT, ms_per_char=160, tolerance=0.6)
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    assert record.status == "success" and record.voice_id == "jf_alpha"
    assert record.model_id == "kokoro-82m-ja" and record.characters == len(TEXT)
    assert record.duration_s == pytest.approx(len(samples) / got_rate, abs=0.15)
    assert record.audio and record.audio.size > 0


def test_it_times_the_original_characters_from_the_model(tenant_a: TenantCtx, kokoro: Voice) -> None:
    text = "今日は2024年3月1日です。東京へ行きます。"
    response = tenant_a.client().post(f"{URL}/with-timestamps?output_format=pcm_24000", {"text": text}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    samples, rate = decode_audio(base64.b64decode(body["audio_base64"]), "pcm_24000")
    assert_speech(samples, rate, expected_rate=24000)
    duration = len(samples) / rate
    original = body["alignment"]
    assert "".join(original["characters"]) == text
    assert "".join(body["normalized_alignment"]["characters"]).startswith("今日は二千二十四年三月一日です。")
    for track in (original, body["normalized_alignment"]):
        starts, ends = track["character_start_times_seconds"], track["character_end_times_seconds"]
        assert starts == sorted(starts) and ends == sorted(ends)
        assert all(s <= e for s, e in zip(starts, ends, strict=True))
        assert abs(ends[-1] - duration) <= 0.05, (ends[-1], duration)
    # Word by word from the model's durations: 東京 starts after the first sentence's pause and
    # each of its kanji gets time of its own.
    normalized = body["normalized_alignment"]
    chars = normalized["characters"]
    tokyo = "".join(chars).index("東京")
    first_end = normalized["character_end_times_seconds"]["".join(chars).index("。")]
    starts = normalized["character_start_times_seconds"]
    assert starts[tokyo] >= first_end > 0
    assert all(a < b for a, b in itertools.pairwise([starts[tokyo], starts[tokyo + 1], starts[tokyo + 2]]))


def test_the_openai_route_takes_a_japanese_voice_by_name(tenant_a: TenantCtx, kokoro: Voice) -> None:
    for voice in ("jf_alpha", "Kumo"):
        response = tenant_a.client().post(
            "/v1/audio/speech",
            {"model": "tts-1", "input": "おはようございます。", "voice": voice, "response_format": "wav"},
            format="json",
        )
        assert response.status_code == 200, response.content
        samples, rate = decode_audio(response.content, "wav")
        assert_speech(samples, rate, expected_rate=24000)
    assert list(SynthesisRecord.objects.order_by("created_at").values_list("voice_id", flat=True)) == [
        "jf_alpha",
        "jm_kumo",
    ]


def test_a_repeat_is_a_cache_hit_in_history(tenant_a: TenantCtx, kokoro: Voice) -> None:
    client = tenant_a.client()
    first = client.post(f"{URL}?output_format=mp3_22050_32", {"text": "ありがとう。"}, format="json")
    second = client.post(f"{URL}?output_format=mp3_22050_32", {"text": "ありがとう。"}, format="json")
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    records = SynthesisRecord.objects.order_by("created_at")
    assert [r.cache_hit for r in records] == [False, True]
    assert all(r.status == "success" and r.text == "ありがとう。" for r in records)


@pytest.mark.parametrize("text", ["東京都庁", "日本国憲法第九条"])
def test_kanji_only_text_is_japanese_for_a_japanese_voice(tenant_a: TenantCtx, kokoro: Voice, text: str) -> None:
    response = tenant_a.client().post(f"{URL}?output_format=pcm_16000", {"text": text}, format="json")
    assert response.status_code == 200, response.content
    samples, rate = decode_audio(response.content, "pcm_16000")
    assert_speech(samples, rate)


def test_language_code_ja_is_accepted_and_one_the_model_cannot_read_refused(tenant_a: TenantCtx, kokoro: Voice) -> None:
    client = tenant_a.client()
    ok = client.post(f"{URL}?output_format=pcm_16000", {"text": "はい。", "language_code": "ja"}, format="json")
    assert ok.status_code == 200
    refused = client.post(f"{URL}?output_format=pcm_16000", {"text": "はい。", "language_code": "ko"}, format="json")
    assert refused.status_code == 422


def test_mixed_japanese_and_english_is_spoken(tenant_a: TenantCtx, kokoro: Voice) -> None:
    text = "このAPIはOpenAIと互換性があります。Thank you."
    response = tenant_a.client().post(f"{URL}?output_format=pcm_16000", {"text": text}, format="json")
    assert response.status_code == 200, response.content
    samples, rate = decode_audio(response.content, "pcm_16000")
    assert_speech(samples, rate)


def test_the_import_command_registers_the_model_and_voices_once(
    db: None, kokoro_dir: str, settings: object, capsys: pytest.CaptureFixture[str]
) -> None:
    settings.VAR_DIR = Path(kokoro_dir).parent  # type: ignore[attr-defined]
    call_command("import_kokoro_voices", "--activate")
    call_command("import_kokoro_voices")
    version = ModelVersion.objects.get(model_id="kokoro-82m-ja")
    assert version.engine == "kokoro-onnx" and version.status == "active" and "ja" in version.languages
    assert Path(version.model_path).parent == Path(kokoro_dir) and len(version.sha256) == 64
    voices = {v.voice_id: v for v in Voice.objects.filter(model_id="kokoro-82m-ja")}
    assert len(voices) == 54  # kokoro-js's voices (tests/kokoro/test_kokoro_voices_npm.py)
    japanese = sorted(v for v in voices if voices[v].language == "ja")
    assert japanese == ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]
    assert voices["jm_kumo"].language == "ja" and voices["jm_kumo"].labels["gender"] == "male"
    assert voices["jf_nezumi"].labels["gender"] == "female" and voices["jf_nezumi"].speaker_index == 2
    assert "Already imported" in capsys.readouterr().out
