"""Reads of usage over time for the dashboard: characters charged per day.

Here, not in ``accounts``, because the days the roll-up has not settled yet
are summed from the synthesis history (``tts.SynthesisRecord``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from accounts.models import DailyUsage, Tenant
from tts.models import SynthesisRecord

# Days the usage roll-up rebuilds on each run (tts.tasks.rollup_usage): read live instead.
LIVE_DAYS = 2


@dataclass(frozen=True)
class DayTotal:
    day: dt.date
    characters: int


def characters_per_day(tenant: Tenant, *, days: int = 30, now: dt.datetime | None = None) -> list[DayTotal]:
    """Characters charged per UTC day over the last ``days`` days, zeros included.

    Settled days come from the roll-up (``accounts.DailyUsage``, rebuilt by a
    beat task every few minutes for the last ``LIVE_DAYS`` days); those the
    roll-up may not have caught up with yet are summed live from the history,
    over its (tenant, created_at) index. Two queries, whatever the volume.
    """
    now = now or timezone.now()
    today = now.astimezone(dt.UTC).date()
    first = today - dt.timedelta(days=days - 1)
    live_first = max(first, today - dt.timedelta(days=LIVE_DAYS - 1))
    totals: dict[dt.date, int] = dict(
        DailyUsage.objects.filter(tenant=tenant, day__gte=first, day__lt=live_first).values_list("day", "characters")
    )
    start = dt.datetime.combine(live_first, dt.time.min, tzinfo=dt.UTC)
    # Every attempt's record carries what it was charged (refunds already taken off), as in the roll-up.
    live = (
        SynthesisRecord.objects.filter(tenant=tenant, created_at__gte=start)
        .annotate(day=TruncDate("created_at", tzinfo=dt.UTC))
        .values("day")
        .annotate(total=Sum("characters"))
        .order_by("day")
    )
    totals.update({row["day"]: int(row["total"] or 0) for row in live})
    return [DayTotal(day=d, characters=int(totals.get(d, 0))) for d in (first + dt.timedelta(n) for n in range(days))]
