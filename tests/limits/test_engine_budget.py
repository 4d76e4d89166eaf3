"""Engine time per request (#32 item 1): estimated per engine before any work, charged as it goes.

Kokoro spends about ten times Piper's engine-seconds per second of audio (``tts/synthesis/engine_time/cost.py``),
so the same text at the slowest speed fits the budget on joe and not on a Kokoro voice. Refused up
front: 413 ``engine_time_exceeded`` naming the text field, nothing billed, no record. A stream that
passes the budget stops there and bills what it delivered.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from websockets.sync.client import connect

from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.limits.test_bad_input import nothing_written
from tests.streaming.test_websocket import read_to_close
from tts.errors import SynthesisError
from tts.models import SynthesisRecord, Voice
from tts.synthesis.engine_time.cost import engine_cost_factor, estimate_engine_seconds

PROSE = "The harbour was quiet that morning, and the boats rocked against the old stone wall. "


def prose(n: int) -> str:
    return (PROSE * (n // len(PROSE) + 1))[:n]


def speech(ctx: TenantCtx, **body: Any) -> Any:
    payload = {"model": "tts-1", "voice": "alloy", "response_format": "pcm", **body}
    return ctx.client().post("/v1/audio/speech", payload, format="json")


def set_budget(ctx: TenantCtx, seconds: float | None) -> None:
    ctx.tenant.plan.max_engine_seconds_per_request = seconds
    ctx.tenant.plan.save(update_fields=["max_engine_seconds_per_request"])


def test_the_factors_are_measured_and_overridable(settings: Any) -> None:
    assert engine_cost_factor("kokoro-onnx") > 5 * engine_cost_factor("piper-onnx")
    settings.TTS_ENGINE_COST_FACTORS = {"piper-onnx": 0.5}
    assert estimate_engine_seconds("piper-onnx", 10.0) == pytest.approx(5.0)
    assert engine_cost_factor("an-engine-never-measured") == engine_cost_factor("kokoro-onnx")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "text",
    [
        prose(4900),
        # The request: a 4,900-character phoneme block at 25 % (the speed floor is 0.5).
        '<speak><prosody rate="25%">[[ ' + "a " * 2430 + "]]</prosody></speak>",
    ],
    ids=["prose", "phoneme-block"],
)
def test_a_kokoro_request_over_the_budget_is_refused_before_any_work(
    tenant_a: TenantCtx, joe: Voice, kokoro: Voice, text: str
) -> None:
    started = time.monotonic()
    response = speech(tenant_a, input=text, speed=0.25)
    assert response.status_code == 413, response.content
    error = response.json()["error"]
    assert error["code"] == "engine_time_exceeded" and error["param"] == "input"
    for hint in ("af_alloy", "kokoro-onnx", "120 engine-seconds", "shorter text", "faster speed", "voice"):
        assert hint in error["message"]
    assert time.monotonic() - started < 5  # no engine run (390 s of engine time before)
    nothing_written(tenant_a)


@pytest.mark.django_db
def test_a_text_whose_characters_already_pass_the_budget_is_refused_before_the_front_end(
    tenant_a: TenantCtx, kokoro: Voice, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#41 item 7: the phoneme front end is not asked for a text the character estimate already refuses."""
    from tts.synthesis.engine_time import budget as engine_budget

    asked: list[str] = []
    real = engine_budget.spoken_phonemes
    monkeypatch.setattr(engine_budget, "spoken_phonemes", lambda text, lang: asked.append(text) or real(text, lang))
    japanese = "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。" * 40
    response = speech(tenant_a, input=japanese, voice="jf_alpha", speed=0.25)
    assert response.status_code == 413, response.content
    assert response.json()["error"]["code"] == "engine_time_exceeded"
    assert asked == []
    nothing_written(tenant_a)
    # A text the characters alone cannot refuse, but its phonemes might, is still read by its front end.
    from tts.text.segment import Segment

    segments = [Segment(text="吾輩は猫である。" * 10, language="ja")]
    by_chars = engine_budget.low_speech_seconds(segments, lambda seg: 1.0, phonemes_past=1e9)
    engine_budget.low_speech_seconds(segments, lambda seg: 1.0, phonemes_past=by_chars * 2, stop_past=by_chars * 2)
    assert asked == [segments[0].text]


@pytest.mark.django_db
def test_the_same_text_passes_on_joe_and_the_subscription_shows_the_budget(
    tenant_a: TenantCtx, joe: Voice, kokoro: Voice
) -> None:
    set_budget(tenant_a, 4.0)  # 200 characters at half speed: Kokoro about 9 s estimated, joe about 2 s spent
    text = prose(200)
    refused = speech(tenant_a, input=text, speed=0.25)
    assert refused.status_code == 413 and refused.json()["error"]["code"] == "engine_time_exceeded"
    nothing_written(tenant_a)
    ok = speech(tenant_a, input=text, speed=0.25, voice="joe")
    assert ok.status_code == 200, ok.content
    samples, rate = decode_audio(ok.content, "pcm_24000")
    assert_speech(samples, rate, expected_rate=24000)
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.status == "success" and record.voice_id == "joe" and record.characters == len(text)
    assert record.duration_s > 15  # slow speech: the floor, 0.5
    subscription = tenant_a.client().get("/v1/user/subscription").json()
    assert subscription["max_engine_seconds_per_request"] == 4.0
    set_budget(tenant_a, None)
    subscription = tenant_a.client().get("/v1/user/subscription").json()
    assert subscription["max_engine_seconds_per_request"] == 120.0  # TTS_MAX_ENGINE_SECONDS_PER_REQUEST


@pytest.mark.django_db(transaction=True)
def test_a_stream_input_connection_stops_at_the_budget_and_bills_what_it_delivered(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice, settings: Any
) -> None:
    # 0.5 engine-seconds: about 6 s of joe's speech (0.08 per second), summed over the connection's pieces.
    set_budget(tenant_a, 0.5)
    sentences = [
        "The harbour was quiet that morning. ",
        "Fishing boats rocked against the old stone wall. ",
        "A gull called from the roof of the harbour master's house. ",
        "Nobody in the village was awake yet. ",
    ]
    url = live_server_url.replace("http://", "ws://") + "/v1/text-to-speech/joe/stream-input?output_format=pcm_16000"
    with connect(url) as ws:
        ws.send(json.dumps({"text": " ", "xi_api_key": tenant_a.key}))
        for sentence in sentences:
            ws.send(json.dumps({"text": sentence, "flush": True}))
        ws.send(json.dumps({"text": ""}))
        audio, messages = read_to_close(ws)
    errors = [m for m in messages if m.get("error")]
    assert errors and errors[0]["error"] == "engine_time_exceeded", messages
    assert errors[0]["param"] == "text" and "more than 0.5 engine-seconds" in errors[0]["message"]
    samples, rate = decode_audio(audio, "pcm_16000")
    assert 2.0 < len(samples) / rate < 8.0  # the budget's 6 s and the sentence that crossed it, not all four
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.status == "failed" and record.error_code == "engine_time_exceeded"
    billed = Usage.objects.get(tenant=tenant_a.tenant).characters
    assert 0 < billed == record.characters < len("".join(sentences))


@pytest.mark.django_db(transaction=True)
def test_an_http_stream_stops_at_the_budget(tenant_a: TenantCtx, joe: Voice) -> None:
    set_budget(tenant_a, 1.0)
    # Five sentences: 0.9 engine-seconds estimated (a low estimate), about 1.8 spent in full.
    text = " ".join(["The harbour was quiet that morning, and the boats rocked against the wall."] * 5)
    response = tenant_a.client().post(
        "/v1/text-to-speech/joe/stream?output_format=pcm_16000", {"text": text}, format="json"
    )
    assert response.status_code == 200  # admitted: its low estimate fits; the budget stops it as it goes
    audio = bytearray()
    with pytest.raises(SynthesisError) as err:  # on a server: the chunked body ends there
        for piece in response.streaming_content:
            audio += piece
    assert err.value.code == "engine_time_exceeded" and err.value.field == "text"
    samples, rate = decode_audio(bytes(audio), "pcm_16000")
    assert 5.0 < len(samples) / rate < 16.0  # about 12.5 s of speech fit, not all 25
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.status == "failed" and record.error_code == "engine_time_exceeded"
    assert 0 < Usage.objects.get(tenant=tenant_a.tenant).characters == record.characters < len(text)
