"""The API docs page as a dashboard user meets it: linked from the menu, text-to-speech first,
and a "Try it out" body for text-to-speech that the server accepts as it stands."""

from __future__ import annotations

from typing import Any

import yaml
from django.test import Client
from django.urls import reverse

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice


def _schema() -> dict[str, Any]:
    response = Client().get("/api/schema/")
    assert response.status_code == 200
    schema: dict[str, Any] = yaml.safe_load(response.content)
    return schema


def test_it_links_the_api_docs_from_the_dashboard_menu(owner_a: Client) -> None:
    html = owner_a.get("/").content.decode()
    assert f'href="{reverse("api-docs")}" id="nav-api-docs"' in html


def test_it_leads_back_to_the_dashboard_and_offers_audio_as_a_download() -> None:
    html = Client().get("/api/docs/").content.decode()
    assert 'id="docs-back"' in html and 'href="/"' in html
    assert "js/api_docs.js" in html and "Download file" in html


def test_it_puts_text_to_speech_first_and_the_staff_only_reload_last() -> None:
    schema = _schema()
    assert schema["tags"][0]["name"] == "text-to-speech"
    assert schema["tags"][-1]["name"] == "staff-only"
    paths = list(schema["paths"])
    assert paths[0] == "/v1/text-to-speech/{voice_id}"
    assert paths[-1] == "/api/admin/reload"
    assert schema["paths"]["/api/admin/reload"]["post"]["tags"] == ["staff-only"]


def test_it_gives_text_to_speech_an_example_the_server_accepts(tenant_a: TenantCtx, joe: Voice) -> None:
    operation = _schema()["paths"]["/v1/text-to-speech/{voice_id}"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["example"]
    assert "model_id" not in body or body["model_id"] != "string"
    voice_id = next(p for p in operation["parameters"] if p["name"] == "voice_id")["example"]
    assert voice_id == joe.voice_id

    response = tenant_a.client().post(f"/v1/text-to-speech/{voice_id}", body, format="json")

    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "audio/mpeg"
    samples, rate = decode_audio(response.content, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text=body["text"])
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    assert record.tenant == tenant_a.tenant and record.characters == len(body["text"])
