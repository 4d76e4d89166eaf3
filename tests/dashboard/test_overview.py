"""The overview: usage against the plan, characters per day, limits."""

from __future__ import annotations

import datetime as dt
import json

from django.test import Client
from django.utils import timezone

from accounts.models import DailyUsage
from accounts.quota import reserve_characters
from tests.dashboard.conftest import make_records
from tests.fixtures import TenantCtx
from tts.usage.stats import characters_per_day


def test_it_shows_usage_against_the_limit_and_the_limits(tenant_a: TenantCtx, owner_a: Client) -> None:
    reserve_characters(tenant=tenant_a.tenant, characters=25_000)
    response = owner_a.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<strong>25,000</strong> of 100,000 characters used" in html
    assert 'aria-valuenow="25000"' in html and "25.0% used" in html
    assert "Requests per minute" in html and "Concurrent streams" in html
    assert "Nothing synthesized in the last 30 days yet" in html
    assert "chart.umd.min.js" not in html  # no chart library loaded for an empty chart


def test_it_charts_characters_per_day_from_the_rollup_and_today_live(
    tenant_a: TenantCtx, tenant_b: TenantCtx, owner_a: Client, django_assert_num_queries
) -> None:
    now = timezone.now()
    today = now.astimezone(dt.UTC).date()
    DailyUsage.objects.create(tenant=tenant_a.tenant, day=today - dt.timedelta(days=3), characters=80)
    DailyUsage.objects.create(tenant=tenant_a.tenant, day=today - dt.timedelta(days=29), characters=7)
    DailyUsage.objects.create(tenant=tenant_a.tenant, day=today - dt.timedelta(days=30), characters=999)
    DailyUsage.objects.create(tenant=tenant_b.tenant, day=today - dt.timedelta(days=3), characters=5000)
    # Settled days are the roll-up's: history it has not counted is not double-counted.
    make_records(tenant_a, 1, characters=555, start=now - dt.timedelta(days=3))
    # Today is read live, every attempt with what it was charged.
    make_records(tenant_a, 3, characters=100, start=now)
    make_records(tenant_a, 1, characters=20, start=now, status="failed")
    make_records(tenant_b, 1, characters=4000, start=now)
    with django_assert_num_queries(2):
        daily = characters_per_day(tenant_a.tenant, days=30, now=now)
    assert len(daily) == 30 and daily[0].day == today - dt.timedelta(days=29) and daily[-1].day == today
    assert daily[-1].characters == 320
    assert daily[-4].characters == 80
    assert daily[0].characters == 7
    assert sum(d.characters for d in daily) == 407
    html = owner_a.get("/").content.decode()
    assert "/static/vendor/chartjs/chart.umd.min.js" in html
    data = json.loads(html.split('<script id="usage-data" type="application/json">', 1)[1].split("</script>", 1)[0])
    assert data["characters"][-1] == 320 and len(data["labels"]) == 30


def test_it_serves_the_chart_library_from_static(tenant_a: TenantCtx, owner_a: Client) -> None:
    response = owner_a.get("/static/vendor/chartjs/chart.umd.min.js")
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content  # type: ignore[attr-defined]
    assert b"Chart.js v4" in body
