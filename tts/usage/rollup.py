"""Usage per tenant per UTC day: rolled up from the history by a beat task,
read by the dashboard chart and ``/v1/usage/character-stats``.

The roll-up recomputes whole days from the history (every attempt and job
writes one history item with the characters it was charged), so running it
again, or late, gives the same rows.
"""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.db.models import Count, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from accounts.models import DailyUsage, Tenant
from tts.models import SynthesisRecord

#: Days summed live from the history when read (the roll-up runs every few minutes).
LIVE_DAYS = 2


def rollup_usage(*, days: int = 2, now: dt.datetime | None = None) -> int:
    """Rebuild the last ``days`` UTC days (today included); the number of rows written."""
    now = now or timezone.now()
    first = now.date() - dt.timedelta(days=days - 1)
    start = dt.datetime.combine(first, dt.time.min, tzinfo=dt.UTC)
    rows = (
        SynthesisRecord.objects.filter(created_at__gte=start)
        .annotate(day=TruncDate("created_at", tzinfo=dt.UTC))
        .values("tenant_id", "day")
        .annotate(characters=Sum("characters"), requests=Count("id"), audio_seconds=Sum("duration_s"))
    )
    written = 0
    with transaction.atomic():
        DailyUsage.objects.filter(day__gte=first).delete()
        DailyUsage.objects.bulk_create(
            DailyUsage(
                tenant_id=row["tenant_id"],
                day=row["day"],
                characters=row["characters"] or 0,
                requests=row["requests"] or 0,
                audio_seconds=round(row["audio_seconds"] or 0.0, 3),
                updated_at=now,
            )
            for row in rows
        )
        written = DailyUsage.objects.filter(day__gte=first).count()
    return written


def daily_usage(
    tenant: Tenant, first: dt.date, last: dt.date, *, now: dt.datetime | None = None
) -> dict[dt.date, DailyUsage]:
    """The tenant's days in ``[first, last]``; days without usage are absent.

    Days the roll-up may not have caught up with yet (today and yesterday) are
    summed live from the history, so fresh usage shows at once; the rest come
    from the roll-up. Two queries whatever the range.
    """
    today = (now or timezone.now()).astimezone(dt.UTC).date()
    live_first = max(first, today - dt.timedelta(days=LIVE_DAYS - 1))
    rows = DailyUsage.objects.filter(
        tenant=tenant, day__gte=first, day__lte=min(last, live_first - dt.timedelta(days=1))
    )
    out = {row.day: row for row in rows}
    if live_first <= last:
        start = dt.datetime.combine(live_first, dt.time.min, tzinfo=dt.UTC)
        end = dt.datetime.combine(last + dt.timedelta(days=1), dt.time.min, tzinfo=dt.UTC)
        live = (
            SynthesisRecord.objects.filter(tenant=tenant, created_at__gte=start, created_at__lt=end)
            .annotate(day=TruncDate("created_at", tzinfo=dt.UTC))
            .values("day")
            .annotate(characters=Sum("characters"), requests=Count("id"), audio_seconds=Sum("duration_s"))
            .order_by("day")
        )
        for row in live:
            out[row["day"]] = DailyUsage(
                tenant=tenant,
                day=row["day"],
                characters=row["characters"] or 0,
                requests=row["requests"] or 0,
                audio_seconds=row["audio_seconds"] or 0.0,
            )
    return out
