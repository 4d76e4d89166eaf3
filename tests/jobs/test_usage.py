"""The daily usage roll-up (beat task) and /v1/usage/character-stats that reads it."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from accounts.models import DailyUsage
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord
from tts.tasks import rollup_usage

URL = "/v1/usage/character-stats"


def record(ctx: TenantCtx, when: dt.datetime, characters: int, source: str = "elevenlabs") -> None:
    SynthesisRecord.objects.create(
        tenant=ctx.tenant, voice_id="joe", characters=characters, output_format="mp3_44100_128",
        source=source, status="success", duration_s=characters / 15, created_at=when,
    )  # fmt: skip


def ms(day: dt.date) -> int:
    return int(dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC).timestamp() * 1000)


def test_it_rolls_usage_up_per_day(tenant_a: TenantCtx, tenant_b: TenantCtx) -> None:
    now = timezone.now().replace(hour=12)
    today = now.date()
    record(tenant_a, now, 100)
    record(tenant_a, now, 50, source="job")
    record(tenant_a, now - dt.timedelta(days=1), 30)
    record(tenant_a, now - dt.timedelta(days=3), 999)
    record(tenant_b, now, 7)

    first = today - dt.timedelta(days=4)
    query = f"?start_unix={ms(first)}&end_unix={ms(today) + 3_600_000}"
    before = tenant_a.client().get(URL + query).json()
    # Today and yesterday are summed live; older days wait for the roll-up.
    assert before["usage"] == {"All": [0.0, 0.0, 0.0, 30.0, 150.0]}

    assert rollup_usage(5) == 4
    assert rollup_usage(5) == 4  # idempotent: days are rebuilt, not added to
    rows = {(r.tenant.slug, r.day): (r.characters, r.requests) for r in DailyUsage.objects.select_related("tenant")}
    assert rows == {
        ("alpha", today): (150, 2),
        ("alpha", today - dt.timedelta(days=1)): (30, 1),
        ("alpha", today - dt.timedelta(days=3)): (999, 1),
        ("beta", today): (7, 1),
    }

    body = tenant_a.client().get(URL + query).json()
    assert body["time"] == [ms(first + dt.timedelta(days=i)) for i in range(5)]
    assert body["usage"] == {"All": [0.0, 999.0, 0.0, 30.0, 150.0]}
    cumulative = tenant_a.client().get(URL + query + "&aggregation_interval=cumulative").json()
    assert cumulative["usage"] == {"All": [1179.0]}
    assert tenant_b.client().get(URL + query).json()["usage"] == {"All": [0.0] * 4 + [7.0]}

    SynthesisRecord.objects.filter(tenant=tenant_a.tenant, created_at__date=today).delete()
    rollup_usage(1)  # only today is rebuilt; older days keep their rows
    assert DailyUsage.objects.filter(tenant=tenant_a.tenant).count() == 2


def test_it_refuses_a_bad_range(tenant_a: TenantCtx) -> None:
    response = tenant_a.client().get(URL + "?end_unix=1000")
    assert response.status_code == 400 and response.json()["detail"]["param"] == "start_unix"
    response = tenant_a.client().get(URL + "?start_unix=90000000000&end_unix=1000")
    assert response.status_code == 400 and response.json()["detail"]["param"] == "end_unix"
