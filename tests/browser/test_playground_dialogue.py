"""The playground's dialogue mode in Chromium at 1280 and 390 px: switch to it, write two turns in
two voices (adding and removing a row), speak; the audio plays as it arrives, the page's audio
element gets a playable source, and the history gets one item with both turns."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import DESKTOP, PHONE, PageErrors, logged_in_page
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice

pytestmark = [pytest.mark.browser, pytest.mark.server, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FIRST = "Is the harbour open today?"
SECOND = "Yes, the boats left at dawn."


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_it_speaks_a_dialogue_of_two_voices(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice, viewport: dict
) -> None:
    Voice.objects.create(voice_id="joe2", name="Joe Two", language="en", model_id=joe.model_id)
    errors = PageErrors()
    context, page = logged_in_page(chromium, live_server_url, viewport, errors)
    page.goto(f"{live_server_url}/playground/")
    page.get_by_label("Dialogue").check()
    assert page.locator("#pg-dialogue").is_visible() and not page.locator("#pg-text").is_visible()
    assert page.locator("#pg-turns .pg-turn").count() == 2  # a two-voice sample to start from

    # A row added and removed again.
    page.locator("#pg-turn-add").click()
    assert page.locator("#pg-turns .pg-turn").count() == 3
    page.get_by_label("Remove turn 3").click()
    assert page.locator("#pg-turns .pg-turn").count() == 2
    assert page.get_by_label("Remove turn 1").is_disabled() is False

    # A blank turn is named before anything is sent.
    page.get_by_label("Turn 2 text").fill("  ")
    page.locator("#pg-play").click()
    assert page.locator("#pg-error").inner_text() == "Turn 2: type something to speak."
    assert not SynthesisRecord.objects.exists()

    page.get_by_label("Turn 1 voice").select_option("joe")
    page.get_by_label("Turn 1 text").fill(FIRST)
    page.get_by_label("Turn 2 voice").select_option("joe2")
    page.get_by_label("Turn 2 text").fill(SECOND)
    # Nothing wider than the screen, at either width.
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]

    page.locator("#pg-play").click()
    page.wait_for_function("window.playgroundStats.done === true", timeout=60_000)
    stats = page.evaluate("window.playgroundStats")
    assert stats["error"] is None, stats
    assert stats["dialogue"]["inputs"] == [{"text": FIRST, "voice_id": "joe"}, {"text": SECOND, "voice_id": "joe2"}]
    assert stats["bytes"] > 0 and stats["scheduled"] > 0 and stats["audioSeconds"] > 1.5
    assert page.locator("#pg-status").inner_text() == "Done"

    audio = page.locator("#pg-audio")
    audio.wait_for(state="visible")
    assert (audio.get_attribute("src") or "").startswith("blob:")
    page.wait_for_function("document.getElementById('pg-audio').readyState >= 1", timeout=10_000)
    duration = page.evaluate("document.getElementById('pg-audio').duration")
    assert abs(duration - stats["audioSeconds"]) < 0.1

    # The history's one item holds both turns.
    page.wait_for_function("(window.playgroundStats.recentRefreshed || 0) >= 1 && window.playgroundStats.itemId")
    items = page.locator("#pg-recent li")
    assert items.count() == 1
    text = items.first.inner_text()
    assert FIRST in text and SECOND in text
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.source == SynthesisRecord.Source.PLAYGROUND and record.status == SynthesisRecord.Status.SUCCESS
    assert str(record.pk) == stats_item(page)
    assert record.settings["dialogue_inputs"] == [{"voice_id": "joe"}, {"voice_id": "joe2"}]
    assert record.characters == len(FIRST) + len(SECOND)
    # Back to one speaker: the text box again, the turns kept for later.
    page.get_by_label("One speaker").check()
    assert page.locator("#pg-text").is_visible() and not page.locator("#pg-dialogue").is_visible()
    context.close()
    assert errors.errors == []


def stats_item(page: Any) -> str:
    return str(page.evaluate("window.playgroundStats.itemId"))
