"""The dashboard's "match a voice from a recording" form in Chromium at 1280 and 390 px: reached from
the voices page; without the consent box ticked it is refused, the error in view and the box focused,
and no match is made; ticked, with a short WAV, it queues a match whose page follows its progress to
the result without a reload; neither page is wider than the screen.

The server searches one stock voice (``SMALL_SEARCH``, as the SDK's test does): the form and the
page are what this is about, the search is tested in tests/matching/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import DESKTOP, PHONE, PageErrors, go_to, logged_in_page
from tests.fixtures import TenantCtx
from tests.matching.recordings import joe_wav
from tests.matching.test_sdk_ivc import SMALL_SEARCH
from tests.servers import start_daphne
from tts.models import Voice, VoiceMatch

pytestmark = [pytest.mark.browser, pytest.mark.server, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= Math.min(window.innerWidth, screen.width)"


@pytest.fixture(scope="module")
def live_server_url(django_db_setup: None, django_db_blocker: object) -> Iterator[str]:
    """This module's daphne (the ``chromium`` fixture's): matches run in its thread, one candidate each."""
    server = start_daphne(SMALL_SEARCH)
    yield server.url
    server.stop()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_it_needs_consent_then_matches_and_follows_the_progress(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice, kokoro: Voice, viewport: dict
) -> None:
    wav = joe_wav(tenant_a, "A short sentence spoken for the browser test.")
    recording = {"name": "joe.wav", "mimeType": "audio/wav", "buffer": wav}
    errors = PageErrors()
    context, page = logged_in_page(chromium, live_server_url, viewport, errors)
    go_to(page, "Voices")
    page.get_by_role("link", name="Match a voice from a recording").click()
    page.wait_for_url(f"{live_server_url}/voices/match/")
    assert page.evaluate(NO_SIDEWAYS_SCROLL), page.evaluate("document.documentElement.scrollWidth")

    # Without the consent box: refused, the error in view at the top and the box focused.
    page.get_by_label("Name").fill("Joe-like")
    page.locator("#match-files").set_input_files([recording])
    page.get_by_role("button", name="Match").click()
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert "Tick the consent box" in alert.inner_text() and "1 thing to fix" in alert.inner_text()
    box = alert.bounding_box()
    assert box is not None and 0 <= box["y"] <= viewport["height"] - box["height"], box
    page.wait_for_function("document.activeElement && document.activeElement.id === 'match-consent'")
    assert page.locator("#match-consent").get_attribute("aria-invalid") == "true"
    assert page.get_by_label("Name").input_value() == "Joe-like"  # what was typed stays
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    assert not VoiceMatch.objects.exists()

    # Ticked, with the file chosen again: queued, and the page follows it to the result.
    page.locator("#match-files").set_input_files([recording])
    page.locator("#match-consent").check()
    page.get_by_role("button", name="Match").click()
    page.wait_for_url(f"{live_server_url}/voices/match/match-*/")
    match = VoiceMatch.objects.get(tenant=tenant_a.tenant)
    assert page.url.endswith(f"/voices/match/{match.voice_id}/")
    first = page.evaluate("window.voiceMatchStats.statuses[0]")
    assert first in ("queued", "running"), first
    assert page.locator("#match-progress").is_visible()
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    page.wait_for_selector("#match-state[data-status='succeeded']", timeout=60_000)
    assert "Matched (not cloned)" in page.locator("#match-state").inner_text()
    assert page.evaluate("window.voiceMatchStats.polls") >= 1  # it came without a reload
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    match.refresh_from_db()
    assert match.status == VoiceMatch.Status.SUCCEEDED and match.candidates_total == 1
    assert Voice.objects.get(voice_id=match.voice_id).category == "matched"
    context.close()
    # The refused form answers 400 on purpose; Chromium logs that, nothing else may be logged.
    assert [e for e in errors.errors if "status of 400" not in e] == []
