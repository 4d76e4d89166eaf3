"""The dashboard's menu in Chromium: folded behind a toggle at 390 px and opened by it, shown whole
at 1280 px, with a link to the API docs; and the docs page, which opens on text-to-speech."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.browser.conftest import DESKTOP, PHONE, PageErrors, logged_in_page
from tests.fixtures import TenantCtx
from tts.models import Voice

pytestmark = [pytest.mark.browser, pytest.mark.server, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_it_folds_the_menu_on_a_phone_and_opens_it_on_click(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx
) -> None:
    errors = PageErrors()
    context, page = logged_in_page(chromium, live_server_url, PHONE, errors)
    toggle = page.get_by_role("button", name="Menu")
    for path in ("/", "/history/"):
        page.goto(f"{live_server_url}{path}")
        assert toggle.is_visible() and toggle.get_attribute("aria-expanded") == "false"
        assert not page.locator("#site-menu").is_visible()
        # Folded, the bar is one row: not the 220 of 844 px the whole menu took.
        assert page.locator(".topbar").bounding_box()["height"] < 70

    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    assert page.get_by_role("link", name="History", exact=True).is_visible()
    page.get_by_role("link", name="History", exact=True).click()
    page.wait_for_url(f"{live_server_url}/history/")
    assert not page.locator("#site-menu").is_visible()  # each page starts folded again
    context.close()
    assert errors.errors == []


def test_it_shows_the_whole_menu_on_a_desktop_with_the_api_docs(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx
) -> None:
    errors = PageErrors()
    context, page = logged_in_page(chromium, live_server_url, DESKTOP, errors)
    assert not page.locator("#menu-toggle").is_visible()
    assert page.locator("#site-menu").is_visible()
    assert page.locator(".topbar").bounding_box()["height"] < 70
    page.get_by_role("link", name="API docs").click()
    page.wait_for_url(f"{live_server_url}/api/docs/")
    # Swagger UI opens on text-to-speech; the staff-only reload comes last.
    page.wait_for_selector(".opblock-tag")
    tags = page.locator(".opblock-tag").all_inner_texts()
    assert tags[0].startswith("text-to-speech") and tags[-1].startswith("staff-only")
    assert page.locator("#docs-back").get_attribute("href") == "/"
    context.close()
    assert errors.errors == []


def test_it_tries_text_to_speech_from_the_docs_and_offers_the_audio_as_a_download(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    errors = PageErrors()
    context = chromium.new_context(viewport=DESKTOP, accept_downloads=True)
    page = context.new_page()
    errors.watch(page)
    refused: list[str] = []
    page.on("response", lambda r: r.status in (400, 401) and refused.append(f"{r.status} {r.request.method} {r.url}"))
    page.goto(f"{live_server_url}/api/docs/")
    page.get_by_role("button", name="Authorize").first.click()
    page.locator(".modal-ux input").first.fill(tenant_a.key)
    page.locator(".modal-ux button.modal-btn.authorize").click()
    page.locator(".modal-ux button.btn-done").click()

    operation = page.locator("#operations-text-to-speech-text_to_speech")
    operation.locator(".opblock-summary").click()
    operation.get_by_role("button", name="Try it out").click()
    assert operation.locator("input[placeholder='voice_id']").input_value() == joe.voice_id
    operation.get_by_role("button", name="Execute").click()

    link = operation.get_by_role("link", name="Download file")
    link.wait_for(timeout=60_000)
    assert (link.get_attribute("href") or "").startswith("blob:")
    with page.expect_download() as info:
        link.click()
    samples, rate = decode_audio(Path(info.value.path()).read_bytes(), "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100)
    assert info.value.suggested_filename.startswith("speech") and info.value.suggested_filename.endswith(".mp3")
    assert refused == []  # the example body is valid, and nothing asks again without the key
    context.close()
    assert errors.errors == []
