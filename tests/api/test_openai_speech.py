"""POST /v1/audio/speech (OpenAI dialect): formats, voices, errors."""

from __future__ import annotations

import pytest

from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice

TEXT = "Fishing boats rocked against the old stone wall."


def post(ctx: TenantCtx, **body: object):
    payload = {"model": "tts-1", "input": TEXT, "voice": "alloy", **body}
    return ctx.client().post("/v1/audio/speech", payload, format="json")


@pytest.mark.parametrize(
    ("fmt", "rate", "content_type"),
    [
        ("mp3", 24000, "audio/mpeg"),
        ("wav", 24000, "audio/wav"),
        ("pcm", 24000, "audio/pcm"),
        ("flac", 24000, "audio/flac"),
        ("opus", 24000, "audio/ogg"),
        ("aac", 24000, "audio/aac"),
    ],
)
def test_it_speaks_each_openai_format(tenant_a: TenantCtx, joe: Voice, fmt: str, rate: int, content_type: str) -> None:
    response = post(tenant_a, response_format=fmt)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == content_type
    samples, got = decode_audio(response.content, fmt)
    assert_speech(samples, got, expected_rate=rate, text=TEXT)
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    assert (record.source, record.status, record.sample_rate) == ("openai", "success", rate)


def test_it_maps_openai_voice_names_and_accepts_ours(tenant_a: TenantCtx, joe: Voice) -> None:
    for voice in ("alloy", "joe", "Joe", {"id": "joe"}):
        assert post(tenant_a, voice=voice, response_format="pcm").status_code == 200
    assert SynthesisRecord.objects.filter(voice_id="joe").count() == 4


def test_it_honours_speed(tenant_a: TenantCtx, joe: Voice) -> None:
    normal = post(tenant_a, response_format="pcm")
    fast = post(tenant_a, response_format="pcm", speed=2.0)
    assert len(fast.content) < len(normal.content) * 0.7


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"input": ""}, 400, "input"),
        ({"input": "  "}, 400, "input"),
        ({"input": "x" * 6000}, 413, "input"),
        ({"voice": "nobody"}, 404, "voice"),
        ({"voice": 7}, 400, "voice"),
        ({"response_format": "ogg"}, 400, "response_format"),
        ({"speed": 10}, 400, "speed"),
        ({"model": "whisper-9"}, 400, "model"),
    ],
)
def test_it_answers_errors_in_openai_shape(
    tenant_a: TenantCtx, joe: Voice, body: dict, status: int, param: str
) -> None:
    response = post(tenant_a, **body)
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["param"] == param
    assert error["type"] and error["code"] and error["message"]
    assert not Usage.objects.filter(characters__gt=0).exists()
    assert not SynthesisRecord.objects.filter(status="success").exists()


def test_it_needs_model_and_input(tenant_a: TenantCtx, joe: Voice) -> None:
    response = tenant_a.client().post("/v1/audio/speech", {"voice": "alloy"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["param"] in ("model", "input")
