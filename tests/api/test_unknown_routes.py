"""Unknown API routes answer a JSON 404 in the caller's dialect, with or without a key, in DEBUG too."""

from __future__ import annotations

import pytest
from django.test import Client
from django.test.utils import override_settings

from tests.fixtures import TenantCtx


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/v1/nope"),
        ("post", "/v1/text-to-speech/joe/bogus"),
        ("delete", "/v1/history/abc/not-a-thing"),
        ("get", "/v1"),
        ("get", "/v2/nope"),
        ("get", "/v2"),
        ("post", "/v2/voices/joe/extra"),
        ("get", "/v2/voices/"),
        ("put", "/api/tts-nope"),
        ("get", "/api/schema/extra"),
    ],
)
def test_it_answers_elevenlabs_json_under_v1_v2_and_api(tenant_a: TenantCtx, method: str, path: str) -> None:
    for client in (tenant_a.client(), Client()):
        response = getattr(client, method)(path, data={"text": "hi"}, content_type="application/json")
        assert response.status_code == 404, response.content[:200]
        assert response["Content-Type"] == "application/json"
        detail = response.json()["detail"]
        assert detail["status"] == "not_found"
        assert f"{method.upper()} {path}" in detail["message"]
        assert response["X-Request-ID"]


def test_it_answers_openai_json_under_v1_audio(tenant_a: TenantCtx) -> None:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {tenant_a.key}")
    response = client.post("/v1/audio/transcriptions", data={"model": "whisper-1"}, content_type="application/json")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": {
            "message": "No such endpoint: POST /v1/audio/transcriptions.",
            "type": "not_found_error",
            "param": None,
            "code": "not_found",
        }
    }


@override_settings(DEBUG=True)
def test_it_answers_json_in_debug_too(db: None) -> None:
    for path in ("/v1/voices/joe/settings/nope", "/v2/models", "/v2/text-to-speech/joe"):
        response = Client().get(path)
        assert response.status_code == 404, path
        assert response["Content-Type"] == "application/json"
        assert response.json()["detail"] == {"status": "not_found", "message": f"No such endpoint: GET {path}."}


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [("post", "/v2/voices", "GET"), ("post", "/v1/models", "GET"), ("put", "/v1/voices/joe", "DELETE, GET")],
)
def test_a_wrong_method_on_a_known_route_is_a_json_405(
    tenant_a: TenantCtx, debug: bool, method: str, path: str, allowed: str
) -> None:
    with override_settings(DEBUG=debug):
        response = getattr(tenant_a.client(), method)(path, data={}, format="json")
    assert response.status_code == 405
    assert response["Content-Type"] == "application/json"
    assert set(response["Allow"].split(", ")) >= set(allowed.split(", "))
    assert response.json()["detail"] == {
        "status": "method_not_allowed",
        "message": f'Method "{method.upper()}" not allowed.',
    }


def test_it_still_adds_a_slash_where_a_route_has_one(db: None) -> None:
    response = Client().get("/api/docs?x=1")
    assert response.status_code == 301 and response["Location"] == "/api/docs/?x=1"
    assert Client().get("/api/docs/").status_code == 200


def test_known_routes_and_other_pages_are_unchanged(tenant_a: TenantCtx) -> None:
    assert tenant_a.client().get("/v1/models").status_code == 200
    assert tenant_a.client().get("/v2/voices").json()["voices"] == []
    page = Client().get("/no-such-page/")
    assert page.status_code == 404 and not page["Content-Type"].startswith("application/json")
