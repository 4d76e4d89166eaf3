"""Playground page: the limit it counts against, and its recent generations as JSON."""

from __future__ import annotations

from django.test import Client

from accounts.quota import reserve_characters
from tests.dashboard.conftest import make_records
from tests.fixtures import TenantCtx, make_tenant
from tts.models import Voice


def test_it_counts_against_the_plan_and_what_the_month_has_left(
    tenant_a: TenantCtx, owner_a: Client, joe: Voice
) -> None:
    html = owner_a.get("/playground/").content.decode()
    assert 'data-max-chars="5000"' in html and '<span id="pg-month-left">100,000</span> left this month' in html
    assert 'maxlength="' not in html  # a paste is never cut silently
    reserve_characters(tenant=tenant_a.tenant, characters=98_000)
    data = owner_a.get("/playground/recent/").json()
    assert (data["max_chars"], data["month_left"]) == (2000, 2000)


def test_it_lists_the_last_playground_items_with_links(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    make_records(tenant_a, 7, source="playground")
    make_records(tenant_a, 2, source="openai")
    other = make_tenant("beta")
    make_records(other, 3, source="playground")
    items = owner_a.get("/playground/recent/").json()["items"]
    assert len(items) == 5 and all(i["text"].startswith("alpha item") for i in items)
    assert items[0]["history_url"] == f"/history/?source=playground#item-{items[0]['id']}"
    html = owner_a.get("/playground/").content.decode()
    assert html.count('data-item-id="') == 5


def _default_dictionary(ctx: TenantCtx) -> None:
    from infra.lookup_cache import clear_lookup_caches
    from tts.pronunciation.dictionaries import dictionary_create

    made, _ = dictionary_create(
        tenant=ctx.tenant,
        name="Acronyms",
        rules=[{"type": "alias", "string_to_replace": "UN", "alias": "the United Nations organisation"}],
    )
    made.is_default = True
    made.save(update_fields=["is_default"])
    clear_lookup_caches()


def test_it_counts_what_a_default_dictionary_makes_billed(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    _default_dictionary(tenant_a)
    html = owner_a.get("/playground/").content.decode()
    assert 'data-billed-url="/playground/billed/"' in html and 'id="pg-billed"' in html

    text = "The UN met today."
    response = owner_a.post("/playground/billed/", {"text": text})

    assert response.status_code == 200
    spoken = text.replace("UN", "the United Nations organisation")
    assert response.json() == {"characters": len(text), "billed": len(spoken)}


def test_it_asks_nothing_more_without_a_default_dictionary(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    html = owner_a.get("/playground/").content.decode()
    assert "data-billed-url" not in html

    response = owner_a.post("/playground/billed/", {"text": "The UN met today."})

    assert response.json() == {"characters": 17, "billed": 17}


def test_it_bounds_the_text_it_prices(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    response = owner_a.post("/playground/billed/", {"text": "a" * 5001})
    assert response.status_code == 400
    assert owner_a.get("/playground/billed/").status_code == 405


def test_it_prices_only_for_members(tenant_a: TenantCtx, joe: Voice) -> None:
    response = Client().post("/playground/billed/", {"text": "Hi"})
    assert response.status_code in (302, 403)
