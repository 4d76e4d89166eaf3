"""The playground in Chromium: the counter when a default pronunciation dictionary makes a text cost
more than its length (beside the characters typed, what Play will bill), and the model dropdown's
name, in full at 1280 and 390 px."""

from __future__ import annotations

from typing import Any

import pytest

from infra.lookup_cache import clear_lookup_caches
from tests.browser.conftest import DESKTOP, PHONE, PageErrors, logged_in_page
from tests.fixtures import TenantCtx
from tts.models import ModelVersion, Voice
from tts.pronunciation.dictionaries import dictionary_create

pytestmark = [pytest.mark.browser, pytest.mark.server, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ALIAS = "the United Nations organisation"


def test_it_shows_what_play_will_bill_with_a_default_dictionary(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    made, _ = dictionary_create(
        tenant=tenant_a.tenant, name="Acronyms", rules=[{"type": "alias", "string_to_replace": "UN", "alias": ALIAS}]
    )
    made.is_default = True
    made.save(update_fields=["is_default"])
    clear_lookup_caches()
    errors = PageErrors()
    context, page = logged_in_page(chromium, live_server_url, DESKTOP, errors)
    page.goto(f"{live_server_url}/playground/")
    text = "The UN met today."
    page.get_by_label("Text", exact=True).fill(text)

    billed = page.locator("#pg-billed")
    billed.wait_for(state="visible")
    assert page.locator("#pg-count-n").inner_text() == str(len(text))
    page.wait_for_function(f"document.getElementById('pg-billed-n').textContent === '{len(text.replace('UN', ALIAS))}'")
    # Without the acronym the bill is the count again, and the note goes.
    page.get_by_label("Text", exact=True).fill("The members met today.")
    billed.wait_for(state="hidden")
    context.close()
    assert errors.errors == []


# The chosen option's text fits its select (its padding and arrow take about 28 px).
OPTION_FITS = """el => { const c = document.createElement('canvas').getContext('2d');
  c.font = getComputedStyle(el).font; const text = el.options[el.selectedIndex].text;
  return c.measureText(text).width + 28 <= el.clientWidth; }"""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_it_names_a_many_language_model_by_its_display_name_in_full(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice, viewport: dict
) -> None:
    # As Kokoro's import names its model (id kokoro-82m-ja, though it speaks 8 languages).
    ModelVersion.objects.filter(model_id=joe.model_id).update(
        display_name="Kokoro-82M", languages=["en", "es", "fr", "hi", "it", "ja", "pt", "zh"]
    )
    errors = PageErrors()
    context, page = logged_in_page(chromium, live_server_url, viewport, errors)
    page.goto(f"{live_server_url}/playground/")
    model = page.get_by_label("Model")
    assert model.locator("option:checked").inner_text() == "Kokoro-82M · 8 languages"
    assert model.input_value() == joe.model_id  # the id the API takes is unchanged
    assert model.evaluate(OPTION_FITS)
    context.close()
    assert errors.errors == []
