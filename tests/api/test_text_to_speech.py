"""POST /v1/text-to-speech/{voice_id}: audio out, history and usage written, bad input refused."""

from __future__ import annotations

import json

import pytest

from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx, joe_engine
from tts.models import SynthesisRecord, Voice

TEXT = "The harbour was quiet that morning. Fishing boats rocked against the old stone wall."
URL = "/v1/text-to-speech/joe"


def spent(ctx: TenantCtx) -> int:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    return usage.characters if usage else 0


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
        ("mp3_22050_32", 22050),
    ],
)
def test_it_synthesizes_in_each_format(tenant_a: TenantCtx, joe: Voice, output_format: str, rate: int) -> None:
    response = tenant_a.client().post(f"{URL}?output_format={output_format}", {"text": TEXT}, format="json")
    assert response.status_code == 200, response.content
    samples, got_rate = decode_audio(response.content, output_format)
    assert_speech(samples, got_rate, expected_rate=rate, text=TEXT)
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    assert record.status == "success"
    assert record.characters == len(TEXT)
    assert record.sample_rate == rate
    assert record.duration_s == pytest.approx(len(samples) / got_rate, abs=0.15)
    assert record.ttfb_ms is not None and record.latency_ms is not None
    assert record.audio and record.audio.size > 0
    assert spent(tenant_a) == len(TEXT)


def test_it_stores_the_audio_it_returned(tenant_a: TenantCtx, joe: Voice) -> None:
    response = tenant_a.client().post(f"{URL}?output_format=wav_22050", {"text": "Short and sweet."}, format="json")
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    stored = record.audio.read()
    a, ra = decode_audio(response.content, "wav_22050")
    b, rb = decode_audio(stored, "wav_22050")
    assert ra == rb and len(a) == len(b)


def test_it_defaults_to_mp3(tenant_a: TenantCtx, joe: Voice) -> None:
    response = tenant_a.client().post(URL, {"text": "Hello there."}, format="json")
    assert response.status_code == 200
    assert response["Content-Type"] == "audio/mpeg"
    _, rate = decode_audio(response.content, "mp3_44100_128")
    assert rate == 44100


def test_it_keeps_no_text_or_audio_when_logging_is_off(tenant_a: TenantCtx, joe: Voice) -> None:
    response = tenant_a.client().post(f"{URL}?enable_logging=false", {"text": "Secret words."}, format="json")
    assert response.status_code == 200
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    assert record.text == "" and not record.text_logged
    assert not record.audio
    assert spent(tenant_a) == len("Secret words.")


def test_it_speaks_slower_when_asked(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    normal = client.post(f"{URL}?output_format=pcm_16000", {"text": TEXT}, format="json")
    slow = client.post(
        f"{URL}?output_format=pcm_16000", {"text": TEXT, "voice_settings": {"speed": 0.7}}, format="json"
    )
    assert slow.status_code == 200
    assert len(slow.content) > len(normal.content) * 1.2


BAD_INPUT = [
    pytest.param({"text": ""}, "", 400, "text", id="empty"),
    pytest.param({"text": "   \n\t "}, "", 400, "text", id="whitespace"),
    pytest.param({"text": "x" * 5001}, "", 413, "text", id="too-long"),
    pytest.param({}, "", 400, "text", id="missing-text"),
    pytest.param({"text": 42}, "", 400, "text", id="number-is-refused"),
    pytest.param({"text": ["a"]}, "", 400, "text", id="wrong-type"),
    pytest.param({"text": "Hi", "voice_settings": {"speed": "fast"}}, "", 400, "voice_settings.speed", id="bad-speed"),
    pytest.param({"text": "Hi", "voice_settings": {"speed": 9}}, "", 400, "voice_settings.speed", id="speed-range"),
    pytest.param({"text": "Hi"}, "?output_format=mp3_1_2", 400, "output_format", id="unknown-format"),
    pytest.param({"text": "Hi", "model_id": "no-such-model"}, "", 400, "model_id", id="unknown-model"),
]


@pytest.mark.parametrize(("body", "query", "status", "field"), BAD_INPUT)
def test_it_refuses_bad_input_clearly(
    tenant_a: TenantCtx, joe: Voice, body: dict, query: str, status: int, field: str | None
) -> None:
    response = tenant_a.client().post(f"{URL}{query}", body, format="json")
    assert response.status_code == status, response.content
    if status == 200:
        return
    detail = response.json()["detail"]
    assert detail["status"] and detail["message"]
    assert detail.get("param") == field
    assert field.split(".")[-1] in detail["message"]
    assert not SynthesisRecord.objects.filter(status="success").exists()
    assert spent(tenant_a) == 0


def test_it_names_allowed_formats(tenant_a: TenantCtx, joe: Voice) -> None:
    response = tenant_a.client().post(f"{URL}?output_format=wav_1", {"text": "Hi"}, format="json")
    assert "mp3_44100_128" in response.json()["detail"]["message"]


def test_it_refuses_non_json(tenant_a: TenantCtx, joe: Voice) -> None:
    response = tenant_a.client().post(URL, data="{not json", content_type="application/json")
    assert response.status_code == 400
    assert "JSON" in response.json()["detail"]["message"]
    assert spent(tenant_a) == 0


def test_it_answers_404_for_unknown_voice(tenant_a: TenantCtx, joe: Voice) -> None:
    response = tenant_a.client().post("/v1/text-to-speech/nobody", {"text": "Hi"}, format="json")
    assert response.status_code == 404
    assert response.json()["detail"]["status"] == "voice_not_found"
    assert spent(tenant_a) == 0


def test_it_applies_the_plan_limit_per_request(tenant_a: TenantCtx, joe: Voice) -> None:
    tenant_a.tenant.plan.max_characters_per_request = 10
    tenant_a.tenant.plan.save()
    response = tenant_a.client().post(URL, {"text": "This is longer than ten."}, format="json")
    assert response.status_code == 413
    assert "10" in response.json()["detail"]["message"]


def test_it_refuses_over_quota_with_429_and_spends_nothing(tenant_a: TenantCtx, joe: Voice) -> None:
    tenant_a.tenant.plan.monthly_character_limit = 20
    tenant_a.tenant.plan.save()
    client = tenant_a.client()
    assert client.post(URL, {"text": "Twelve chars"}, format="json").status_code == 200
    response = client.post(URL, {"text": "Twelve chars"}, format="json")
    assert response.status_code == 429
    assert response.json()["detail"]["status"] == "quota_exceeded"
    assert int(response["Retry-After"]) > 0
    assert spent(tenant_a) == 12
    assert SynthesisRecord.objects.count() == 1


def test_it_refunds_when_the_engine_fails(tenant_a: TenantCtx, joe: Voice, monkeypatch: pytest.MonkeyPatch) -> None:
    from tts.inference.engine import EngineError
    from tts.inference.piper_onnx import PiperOnnxEngine

    def broken(self: object, *args: object, **kwargs: object) -> None:
        raise EngineError("boom", retryable=True)

    monkeypatch.setattr(PiperOnnxEngine, "synthesize_ids", broken)
    if joe_engine() == "vits-torch":
        from tts.inference.vits_torch import VitsTorchEngine

        monkeypatch.setattr(VitsTorchEngine, "synthesize_ids", broken)
        monkeypatch.setattr(VitsTorchEngine, "iter_synthesize_ids", broken)
    response = tenant_a.client().post(URL, {"text": "This will fail."}, format="json")
    assert response.status_code == 503
    assert response["Retry-After"]
    record = SynthesisRecord.objects.get()
    assert record.status == "failed" and record.error_code == "engine_error"
    assert not record.audio
    assert spent(tenant_a) == 0


def test_it_sends_errors_as_json_with_the_request_id(tenant_a: TenantCtx, joe: Voice) -> None:
    response = tenant_a.client().post(URL, {"text": ""}, format="json", HTTP_X_REQUEST_ID="req-12345678")
    assert response["X-Request-ID"] == "req-12345678"
    json.loads(response.content)


def test_it_refuses_text_the_voice_cannot_speak(tenant_a: TenantCtx, joe: Voice) -> None:
    chinese = "今天天气很好，我们去公园散步吧。"  # noqa: RUF001
    response = tenant_a.client().post(URL, {"text": chinese}, format="json")
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail["status"] == "unsupported_language" and detail["param"] == "text"
    response = tenant_a.client().post(URL, {"text": "Hello.", "language_code": "de"}, format="json")
    assert response.status_code == 422 and response.json()["detail"]["param"] == "language_code"
    assert spent(tenant_a) == 0


def test_it_reads_numbers_and_symbols_aloud(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    url = f"{URL}?output_format=pcm_16000"
    normalized = client.post(
        url, {"text": "Dr. Smith paid $3.50 on 1/2/2024.", "apply_text_normalization": "on"}, format="json"
    )
    spelled = client.post(
        url,
        {
            "text": "Doctor Smith paid three dollars and fifty cents on January second, twenty twenty-four.",
            "apply_text_normalization": "off",
        },
        format="json",
    )
    assert normalized.status_code == spelled.status_code == 200
    # The pipeline speaks the normalized reading: about as long as the spelled-out text.
    assert abs(len(normalized.content) - len(spelled.content)) < 0.15 * len(spelled.content)
    record = SynthesisRecord.objects.get(pk=normalized["history-item-id"])
    assert record.text == "Dr. Smith paid $3.50 on 1/2/2024." and record.characters == 33
