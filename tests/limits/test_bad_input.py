"""Inputs bounded before work: oversized bodies, malformed or too-deep JSON, wrong types and
out-of-range query numbers are refused in the caller's dialect, bill nothing and write no row."""

from __future__ import annotations

import json

import pytest
from django.test import Client, override_settings

from accounts.models import Usage
from tests.fixtures import TenantCtx
from tts.models import Job, SynthesisRecord, Voice

pytestmark = pytest.mark.django_db

TTS = "/v1/text-to-speech/joe"
SPEECH = "/v1/audio/speech"


def nothing_written(ctx: TenantCtx) -> None:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    assert usage is None or usage.characters == 0
    assert not SynthesisRecord.objects.filter(tenant=ctx.tenant).exists()
    assert not Job.objects.filter(tenant=ctx.tenant).exists()


def post_raw(client: Client, path: str, body: bytes, **headers: str) -> object:
    return client.post(path, data=body, content_type="application/json", **headers)


# --- body size ---------------------------------------------------------------------------


@override_settings(TTS_MAX_BODY_BYTES=1000)
@pytest.mark.parametrize("with_key", [True, False])
def test_it_refuses_an_oversized_body_before_parsing(tenant_a: TenantCtx, joe: Voice, with_key: bool) -> None:
    client = tenant_a.client() if with_key else Client()
    # Not even JSON: the refusal comes before any parser (or key check) looks at it.
    response = post_raw(client, TTS, b"x" * 1001)
    assert response.status_code == 413
    detail = response.json()["detail"]
    assert detail["status"] == "body_too_large"
    assert "1000 bytes" in detail["message"]
    nothing_written(tenant_a)


@override_settings(TTS_MAX_BODY_BYTES=1000)
def test_it_refuses_an_oversized_body_in_openai_dialect(tenant_a: TenantCtx, joe: Voice) -> None:
    body = json.dumps({"model": "tts-1", "voice": "alloy", "input": "a" * 2000}).encode()
    response = post_raw(tenant_a.client(), SPEECH, body)
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "body_too_large"
    assert error["type"] == "invalid_request_error"
    nothing_written(tenant_a)


@override_settings(TTS_MAX_BODY_BYTES=1000, TTS_JOB_MAX_BODY_BYTES=5000)
def test_job_routes_have_their_own_body_limit(tenant_a: TenantCtx, joe: Voice) -> None:
    body = json.dumps({"voice_id": "joe", "text": "Long text. " * 500}).encode()
    assert len(body) > 5000
    response = post_raw(tenant_a.client(), "/v1/jobs", body)
    assert response.status_code == 413
    assert "5000 bytes" in response.json()["detail"]["message"]
    nothing_written(tenant_a)


def test_a_body_under_the_limit_is_served(tenant_a: TenantCtx, joe: Voice) -> None:
    response = tenant_a.client().post(f"{TTS}?output_format=pcm_16000", {"text": "Hello there."}, format="json")
    assert response.status_code == 200
    assert len(response.content) > 16000 // 4


# --- JSON shape --------------------------------------------------------------------------


def test_a_100000_deep_array_is_a_400_not_a_500(tenant_a: TenantCtx, joe: Voice) -> None:
    body = b"[" * 100_000 + b"]" * 100_000
    response = post_raw(tenant_a.client(), TTS, body)
    assert response.status_code == 400
    assert response.json()["detail"]["status"] == "invalid_json"
    nothing_written(tenant_a)


def test_json_deeper_than_the_bound_is_refused(tenant_a: TenantCtx, joe: Voice) -> None:
    nested: object = "x"
    for _ in range(40):
        nested = {"a": nested}
    body = json.dumps({"text": "Hello.", "voice_settings": nested}).encode()
    response = post_raw(tenant_a.client(), TTS, body)
    assert response.status_code == 400
    assert "deeper than 32" in response.json()["detail"]["message"]
    nothing_written(tenant_a)


@pytest.mark.parametrize(
    "body",
    [b"{", b'{"text": "a"', b"\xff\xfe\x00", b'{"text": NaN}', b'{"text": "a"} trailing', b"[1, 2]", b'"text"'],
)
def test_malformed_json_is_a_400(tenant_a: TenantCtx, joe: Voice, body: bytes) -> None:
    response = post_raw(tenant_a.client(), TTS, body)
    assert response.status_code == 400
    assert response.json()["detail"]["status"] in ("invalid_json", "invalid_request")
    nothing_written(tenant_a)


def test_malformed_json_is_a_400_in_openai_dialect(tenant_a: TenantCtx, joe: Voice) -> None:
    response = post_raw(tenant_a.client(), SPEECH, b"[" * 5000)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"
    nothing_written(tenant_a)


# --- types -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [123, 1.5, True, ["Hello."], {"t": "Hello."}])
def test_text_must_be_a_string(tenant_a: TenantCtx, joe: Voice, value: object) -> None:
    response = tenant_a.client().post(TTS, {"text": value}, format="json")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail["param"] == "text"
    assert "string" in detail["message"]
    nothing_written(tenant_a)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": "tts-1", "voice": "alloy", "input": 123}, "input"),
        ({"model": 1, "voice": "alloy", "input": "Hello."}, "model"),
        ({"model": "tts-1", "voice": "alloy", "input": "Hello.", "response_format": 3}, "response_format"),
        ({"model": "tts-1", "voice": "alloy", "input": "Hello.", "speed": "fast"}, "speed"),
        ({"model": "tts-1", "voice": 7, "input": "Hello."}, "voice"),
    ],
)
def test_openai_wrong_types_name_the_field(tenant_a: TenantCtx, joe: Voice, body: dict, field: str) -> None:
    response = tenant_a.client().post(SPEECH, body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["param"] == field
    nothing_written(tenant_a)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"voice_id": "joe", "text": 5}, "text"),
        ({"voice_id": "joe", "items": ["One.", 2]}, "items"),
        ({"voice_id": 9, "text": "Hello."}, "voice_id"),
    ],
)
def test_job_wrong_types_name_the_field(tenant_a: TenantCtx, joe: Voice, body: dict, field: str) -> None:
    response = tenant_a.client().post("/v1/jobs", body, format="json")
    assert response.status_code == 400
    assert response.json()["detail"]["param"].startswith(field)
    nothing_written(tenant_a)


def test_history_download_ids_must_be_strings(tenant_a: TenantCtx) -> None:
    response = tenant_a.client().post("/v1/history/download", {"history_item_ids": [1, 2]}, format="json")
    assert response.status_code == 400
    assert response.json()["detail"]["param"].startswith("history_item_ids")


# --- numbers in the query ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/usage/character-stats?start_unix=99999999999999999&end_unix=1", "start_unix"),
        ("/v1/usage/character-stats?start_unix=0&end_unix=99999999999999999", "end_unix"),
        ("/v1/usage/character-stats?start_unix=-1&end_unix=1", "start_unix"),
        ("/v1/history?date_after_unix=99999999999999999", "date_after_unix"),
        ("/v1/history?date_before_unix=99999999999999999", "date_before_unix"),
        ("/v1/history?page_size=100000", "page_size"),
        ("/v1/history?page_size=" + "9" * 5000, "page_size"),
        ("/v1/jobs?page_size=0", "page_size"),
    ],
)
def test_numbers_in_the_query_are_range_checked(tenant_a: TenantCtx, path: str, field: str) -> None:
    response = tenant_a.client().get(path)
    assert response.status_code == 400, response.content
    assert response.json()["detail"]["param"] == field


def test_the_largest_accepted_dates_still_answer(tenant_a: TenantCtx) -> None:
    response = tenant_a.client().get("/v1/history?date_after_unix=253402300799")
    assert response.status_code == 200
    assert response.json()["history"] == []
    response = tenant_a.client().get("/v1/usage/character-stats?start_unix=253402100000000&end_unix=253402214399999")
    assert response.status_code == 200


# --- the ASGI wrapper (servers other than daphne) ------------------------------------------


async def _drive_asgi(headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> tuple[list[dict], int, bool]:
    from ttsplatform.body_limit import BodyLimitASGI

    called = False
    received = 0

    async def app(scope: dict, receive: object, send: object) -> None:
        nonlocal called
        called = True
        while True:
            message = await receive()  # type: ignore[operator]
            if not message.get("more_body"):
                break

    pending = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

    async def receive() -> dict:
        nonlocal received
        message = pending.pop(0)
        received += 1
        return message

    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "path": "/v1/text-to-speech/joe", "headers": headers}
    await BodyLimitASGI(app)(scope, receive, send)
    return sent, received, called


@override_settings(TTS_MAX_BODY_BYTES=1000)
def test_the_asgi_wrapper_refuses_on_content_length_without_reading() -> None:
    import asyncio

    sent, received, called = asyncio.run(_drive_asgi([(b"content-length", b"5000")], [b"x" * 5000]))
    assert received == 0 and not called
    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"])["detail"]["status"] == "body_too_large"


@override_settings(TTS_MAX_BODY_BYTES=1000)
def test_the_asgi_wrapper_stops_a_chunked_body_at_the_limit() -> None:
    import asyncio

    sent, received, _ = asyncio.run(_drive_asgi([], [b"x" * 400] * 50))
    assert received == 3  # 1,200 bytes: the third chunk passes the limit, nothing more is read
    assert sent[0]["status"] == 413


# --- dashboard forms -----------------------------------------------------------------------


def test_dashboard_numbers_and_dates_at_their_limits_are_no_500(tenant_a: TenantCtx) -> None:
    client = Client()
    client.force_login(tenant_a.owner)  # type: ignore[arg-type]
    assert client.get("/history/?date_to=9999-12-31").status_code == 200
    assert client.get("/history/?date_from=9999-12-31&date_to=9999-12-31").status_code == 200
    assert client.post("/tenant/switch/", {"tenant_id": "9" * 30}).status_code == 404
    assert client.post("/keys/99999999999999999999999/revoke/").status_code == 404


def test_a_job_body_under_its_limit_is_not_cut_by_djangos_own(tenant_a: TenantCtx, joe: Voice) -> None:
    # 3.6 MB of JSON (CJK escaped as \uXXXX): over Django's 2.5 MB default, under TTS_JOB_MAX_BODY_BYTES.
    body = json.dumps({"voice_id": "joe", "text": "中文。" * 200_000}).encode()
    assert 2_621_440 < len(body) < 4 * 1024 * 1024
    response = post_raw(tenant_a.client(), "/v1/jobs", body)
    # Refused by the plan's job_max_characters (JSON, naming the field), not by a body bound.
    assert response.status_code == 413
    assert response.json()["detail"]["param"] == "text"
    nothing_written(tenant_a)


def test_it_refuses_null_pronunciation_locators_naming_the_field(tenant_a: TenantCtx, joe: Voice) -> None:
    """Found by schemathesis: ``[null, null]`` was a 500 on every text-to-speech route."""
    for path in ("", "/stream", "/with-timestamps", "/stream/with-timestamps"):
        response = tenant_a.client().post(
            f"/v1/text-to-speech/joe{path}",
            {"text": "Hello.", "pronunciation_dictionary_locators": [None, None]},
            format="json",
        )
        assert response.status_code == 400, (path, response.content)
        assert "pronunciation_dictionary_locators" in response.content.decode()
    assert not SynthesisRecord.objects.exists()
