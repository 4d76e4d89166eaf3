"""Voices page and its previews; the playground page."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice
from tts.synthesis.preview import preview_text


def test_it_lists_the_voices_with_language_and_labels(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    joe.labels = {"accent": "american", "gender": "male"}
    joe.save()
    Voice.objects.create(voice_id="secret-b", name="Bea", model_id=joe.model_id, tenant=tenant_a.tenant)
    html = owner_a.get("/voices/").content.decode()
    assert "<code>joe</code> · en · shared" in html
    assert "accent: american" in html
    assert "private to Alpha" in html
    assert 'data-preview-url="/voices/joe/preview.mp3"' in html


def test_it_plays_a_preview_without_charging_the_tenant(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    response = owner_a.get("/voices/joe/preview.mp3")
    assert response.status_code == 200 and response["Content-Type"] == "audio/mpeg"
    samples, rate = decode_audio(response.content, "mp3_22050_32")
    assert_speech(samples, rate, expected_rate=22050, text=preview_text(joe), tolerance=0.6)
    assert not SynthesisRecord.objects.exists()
    assert not tenant_a.tenant.usage.exists()
    assert owner_a.get("/voices/nobody/preview.mp3").status_code == 404


def test_it_says_when_there_are_no_voices(tenant_a: TenantCtx, owner_a: Client) -> None:
    assert "No voices are available yet" in owner_a.get("/voices/").content.decode()
    assert 'id="playground-empty"' in owner_a.get("/playground/").content.decode()


def test_it_offers_the_tenants_voices_in_the_playground(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    html = owner_a.get("/playground/").content.decode()
    # Preselected: the voice for the sample text's language (English: the default voice).
    assert '<option value="joe" data-model="en_US-joe-medium" selected>Joe (en)</option>' in html
    model = '<option value="en_US-joe-medium" title="API id: en_US-joe-medium" selected>en_US-joe-medium</option>'
    assert model in html
    assert 'data-output-format="pcm_22050"' in html and "/static/js/playground.js" in html


def test_the_playground_offers_the_models_that_serve_the_tenants_voices(
    tenant_a: TenantCtx, tenant_b: TenantCtx, owner_a: Client, joe: Voice
) -> None:
    from tests.fixtures import second_version
    from tts.models import ModelVersion

    old = ModelVersion.objects.get()
    second_version(old, model_id="joe-copy", version="1", status="active", display_name="Joe copy")
    second_version(old, model_id="beta-only", version="1", status="active")
    second_version(old, model_id="joe-draft", version="1")  # not active: serves nothing
    Voice.objects.create(voice_id="zed", name="Zed", language="en", model_id="joe-copy")
    Voice.objects.create(voice_id="bea", name="Bea", language="en", model_id="beta-only", tenant=tenant_b.tenant)
    Voice.objects.create(voice_id="dora", name="Dora", language="en", model_id="joe-draft")
    html = owner_a.get("/playground/").content.decode()
    models = html[html.index('id="pg-model"') : html.index("</select>", html.index('id="pg-model"'))]
    # The display name (the id, which can mislead, as kokoro-82m-ja did for 8 languages, is in the title).
    assert '<option value="joe-copy" title="API id: joe-copy">Joe copy</option>' in models
    assert '<option value="en_US-joe-medium" title="API id: en_US-joe-medium" selected>' in models
    assert "beta-only" not in models and "joe-draft" not in models  # another tenant's, and one no version serves
    # Every voice of every model is offered, grouped by its model (choosing one chooses its model).
    voices = html[html.index('id="pg-voice"') : html.index("</select>", html.index('id="pg-voice"'))]
    groups = re.findall(r'<optgroup label="([^"]*)">(.*?)</optgroup>', voices, re.S)
    assert [(label, re.findall(r'<option value="(\w+)" data-model="([\w-]+)"', body)) for label, body in groups] == [
        ("en_US-joe-medium", [("joe", "en_US-joe-medium")]),
        ("Joe copy", [("zed", "joe-copy")]),
    ]
    assert "hidden" not in voices and "disabled" not in voices
    assert "beta-only" not in voices and "dora" not in voices


def test_the_playground_names_a_voice_group_by_its_model_and_languages(
    tenant_a: TenantCtx, owner_a: Client, joe: Voice
) -> None:
    from tts.models import ModelVersion

    ModelVersion.objects.filter(model_id=joe.model_id).update(
        display_name="Kokoro-82M", languages=["en", "es", "fr", "hi", "it", "ja", "pt", "zh"]
    )
    html = owner_a.get("/playground/").content.decode()
    assert '<optgroup label="Kokoro-82M (8 languages)">' in html


def test_voices_no_version_serves_are_not_offered(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    from tts.models import ModelVersion

    Voice.objects.create(voice_id="orphan", name="Aaron Orphan", model_id="no-such-model")
    for url in ("/voices/", "/playground/", "/jobs/"):
        html = owner_a.get(url).content.decode()
        assert "joe" in html and "orphan" not in html, url
    ModelVersion.objects.filter(model_id=joe.model_id).update(status="retired")
    assert 'id="playground-empty"' in owner_a.get("/playground/").content.decode()
    assert "No voices are available yet" in owner_a.get("/voices/").content.decode()
    # History keeps offering the voice as a filter: its items are still there.
    assert '<option value="joe">' in owner_a.get("/history/").content.decode()


def kokoro_like(joe: Voice) -> None:
    for voice_id, name in (("jf_alpha", "Alpha"), ("jm_kumo", "Kumo")):
        Voice.objects.create(
            voice_id=voice_id, name=name, language="ja", model_id=joe.model_id, labels={"engine": "kokoro"}
        )


def test_a_refused_blend_says_so_at_the_top_and_leads_to_the_form(
    tenant_a: TenantCtx, owner_a: Client, joe: Voice
) -> None:
    kokoro_like(joe)
    response = owner_a.post("/voices/blend/", {})
    assert response.status_code == 400
    html = response.content.decode()
    summary = re.search(r'<div class="error" role="alert" id="blend-errors-summary">(.*?)</div>', html, re.S)
    assert summary is not None and html.index("blend-errors-summary") < html.index('id="voice-list"')
    assert "The voice was not made: 2 things to fix." in summary.group(1)
    assert '<a href="#voice-blend">Go to the form</a>' in summary.group(1)
    # The page opens at the form: its first wrong field is focused (autofocus scrolls to it).
    assert re.search(r'<input type="text" id="blend-name"[^>]* aria-invalid="true"[^>]* autofocus>', html)
    assert html.count("autofocus") == 1
    # A mix of one voice: the first weight is where to fix it.
    html = owner_a.post("/voices/blend/", {"name": "Solo", "weight-jf_alpha": "1"}).content.decode()
    assert "1 thing to fix" in html and html.count("autofocus") == 1
    assert re.search(r'<input id="weight-jf_alpha"[^>]* autofocus>', html)
    assert "blend-errors-summary" not in owner_a.get("/voices/").content.decode()


def test_a_new_blend_is_shown_where_it_is_in_the_list(
    tenant_a: TenantCtx, owner_a: Client, joe: Voice, monkeypatch: pytest.MonkeyPatch
) -> None:
    kokoro_like(joe)

    def create(*, tenant: object, name: str, blend: dict[str, float]) -> Voice:
        assert blend == {"jf_alpha": 1.0, "jm_kumo": 3.0}
        return Voice.objects.create(voice_id="blend1", name=name, language="ja", model_id=joe.model_id, tenant=tenant)

    monkeypatch.setattr("tts.dashboard.views.voice_blend_create", create)
    response = owner_a.post("/voices/blend/", {"name": "Soft Kumo", "weight-jf_alpha": "1", "weight-jm_kumo": "3"})
    assert response.status_code == 302 and response["Location"] == "/voices/?created=blend1#voice-blend1"
    html = owner_a.get(response["Location"]).content.decode()
    assert '<li class="card voice-card created" id="voice-blend1"' in html
    assert 'Soft Kumo <span class="badge ok">New</span>' in html
    assert html.count("voice-card created") == 1
