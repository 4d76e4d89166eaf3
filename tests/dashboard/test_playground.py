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
