"""NUL and lone surrogates: one check at every door, one error code, nothing billed, no row (#32 item 4).

Before, REST refused them (DRF's field validators: 400 ``invalid_request``) while the
WebSockets and Wyoming took them to the history insert (``UnicodeEncodeError``, a traceback per
try, a reset socket with no message, Wyoming's ``internal_error``). Now every door runs
``tts.text.characters``: 400 ``invalid_characters`` naming the field, in the caller's dialect.
Wyoming: ``tests/wyoming/test_wyoming_bounds.py``.
"""

from __future__ import annotations

import json
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
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.stages.parse import output_format_for
from tts.synthesis.stages.pipeline import synthesis_create

SURROGATE = "Hello \ud800 there."
NUL = "Hello \x00 there."


def post_json(ctx: TenantCtx, path: str, body: dict[str, Any]) -> Any:
    # json.dumps escapes the lone surrogate ("\ud800"), as a client's JSON encoder would send it.
    return ctx.client().post(path, data=json.dumps(body), content_type="application/json")


@pytest.mark.django_db
@pytest.mark.parametrize("text", [SURROGATE, NUL], ids=["surrogate", "nul"])
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/text-to-speech/joe", {"text": "{t}"}, "text"),
        ("/v1/text-to-speech/joe/stream", {"text": "{t}"}, "text"),
        ("/v1/text-to-speech/joe", {"text": "Hi.", "next_text": "{t}"}, "next_text"),
        ("/v1/text-to-speech/joe", {"text": "Hi.", "voice_settings": {"style": "{t}"}}, "voice_settings.style"),
        ("/v1/jobs", {"voice_id": "joe", "items": ["Fine.", "{t}"]}, "items[1]"),
    ],
)
def test_elevenlabs_routes_refuse_them_naming_the_field(
    tenant_a: TenantCtx, joe: Voice, text: str, path: str, body: dict[str, Any], field: str
) -> None:
    filled = json.loads(json.dumps(body).replace("{t}", json.dumps(text)[1:-1]))
    response = post_json(tenant_a, path, filled)
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert detail["status"] == "invalid_characters" and detail["param"] == field
    assert ("NUL" if "\x00" in text else "U+D800") in detail["message"]
    nothing_written(tenant_a)


@pytest.mark.django_db
def test_openai_and_the_reference_routes_answer_the_same_code(tenant_a: TenantCtx, joe: Voice) -> None:
    openai = post_json(tenant_a, "/v1/audio/speech", {"model": "tts-1", "voice": "alloy", "input": SURROGATE})
    assert openai.status_code == 400
    assert openai.json()["error"]["code"] == "invalid_characters" and openai.json()["error"]["param"] == "input"
    for path in ("/tts", "/api/tts"):  # FastAPI's dialect: {"detail": message}
        compat = post_json(tenant_a, path, {"text": NUL, "speaker": "joe"})
        assert compat.status_code == 400 and compat.json()["detail"].startswith("text: contains NUL"), path
    # A key of an object is a string too.
    keyed = post_json(tenant_a, "/v1/text-to-speech/joe", {"text": "Hi.", "voice_settings": {"\ud800": 1}})
    assert keyed.status_code == 400 and keyed.json()["detail"]["param"] == "voice_settings"
    nothing_written(tenant_a)


@pytest.mark.django_db
def test_the_pipeline_refuses_them_for_a_caller_without_a_door(tenant_a: TenantCtx, joe: Voice) -> None:
    request = SynthesisRequest(
        tenant=tenant_a.tenant,
        voice_id="joe",
        text=SURROGATE,
        output_format=output_format_for("pcm_16000"),
        source="api",
    )
    with pytest.raises(SynthesisError) as caught:
        synthesis_create(request)
    assert (caught.value.status, caught.value.code, caught.value.field) == (400, "invalid_characters", "text")
    nothing_written(tenant_a)


def _ws(http_url: str, route: str) -> str:
    return http_url.replace("http://", "ws://") + f"/v1/text-to-speech/joe/{route}?output_format=pcm_16000"


@pytest.mark.django_db(transaction=True)
def test_stream_input_refuses_the_piece_and_speaks_the_rest(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    with connect(_ws(live_server_url, "stream-input")) as ws:
        ws.send(json.dumps({"text": " ", "xi_api_key": tenant_a.key}))
        ws.send(json.dumps({"text": "The harbour was quiet. "}))
        ws.send(json.dumps({"text": "A \ud800 gull. "}))  # refused whole; the connection goes on
        ws.send(json.dumps({"text": "A boat came in. "}))
        ws.send(json.dumps({"text": ""}))
        audio, messages = read_to_close(ws)
        assert ws.close_code == 1000
    (refusal,) = [m for m in messages if m.get("error")]
    assert refusal["error"] == "invalid_characters" and refusal["param"] == "text" and refusal["code"] is None
    assert messages[-1] == {"isFinal": True}
    samples, rate = decode_audio(audio, "pcm_16000")
    spoken = "The harbour was quiet. A boat came in. "
    assert_speech(samples, rate, expected_rate=16000, text=spoken)
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.status == "success" and record.text == spoken and record.characters == len(spoken)
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == len(spoken)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("route", ["stream-input", "multi-stream-input"])
def test_a_first_message_with_them_closes_before_any_work(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice, route: str
) -> None:
    """Not initialized yet: refused and closed (4008), the key in the message never looked up."""
    with connect(_ws(live_server_url, route)) as ws:
        ws.send(json.dumps({"text": " ", "context_id": "a", "xi_api_key": tenant_a.key + "\x00"}))
        _, messages = read_to_close(ws)
        assert ws.close_code == 4008
    assert messages == [
        {
            "message": messages[0]["message"],
            "error": "invalid_characters",
            "code": 4008,
            "param": "xi_api_key",
            "request_id": messages[0]["request_id"],
        }
    ]
    nothing_written(tenant_a)


@pytest.mark.django_db(transaction=True)
def test_multi_context_refuses_the_message_and_the_context_goes_on(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    with connect(_ws(live_server_url, "multi-stream-input")) as ws:
        ws.send(json.dumps({"text": " ", "context_id": "a", "xi_api_key": tenant_a.key}))
        ws.send(json.dumps({"text": "Hello there. ", "context_id": "a"}))
        ws.send(json.dumps({"text": "\ud83d broken emoji. ", "context_id": "a"}))
        ws.send(json.dumps({"text": " ", "context_id": "b\ud800"}))  # the context's name too
        ws.send(json.dumps({"close_socket": True}))
        audio, messages = read_to_close(ws)
        assert ws.close_code == 1000
    refusals = [m for m in messages if m.get("error")]
    assert [(m["error"], m["param"]) for m in refusals] == [
        ("invalid_characters", "text"),
        ("invalid_characters", "context_id"),
    ]
    assert {"isFinal": True, "contextId": "a"} in messages
    samples, rate = decode_audio(audio, "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text="Hello there. ")
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.text == "Hello there. " and record.status == "success"
