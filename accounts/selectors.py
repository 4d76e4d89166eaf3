"""Reads for the dashboard: a user's memberships, the current tenant, usage per day.

Every read takes the tenant (or the user) it is scoped to, so a page cannot
reach another tenant's rows by forgetting a filter.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from tts.models import SynthesisRecord

from .models import ApiKey, DailyUsage, Membership, Tenant

# Days the usage roll-up rebuilds on each run (tts.tasks.rollup_usage): read live instead.
LIVE_DAYS = 2


def memberships_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Membership]:
    """The active tenants a user belongs to, for the switcher."""
    if not user.is_authenticated:
        return Membership.objects.none()
    return (
        Membership.objects.filter(user_id=user.pk, tenant__is_active=True)
        .select_related("tenant__plan")
        .order_by("tenant__name", "tenant_id")
    )


def membership_get(user: AbstractBaseUser | AnonymousUser, tenant_id: object) -> Membership | None:
    try:
        pk = int(str(tenant_id))
    except (TypeError, ValueError):
        return None  # a malformed id is simply not a membership
    return memberships_for_user(user).filter(tenant_id=pk).first()


def api_keys_for_tenant(tenant: Tenant) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(tenant=tenant).select_related("created_by").order_by("-created_at", "-id")


def api_key_get(tenant: Tenant, key_id: object) -> ApiKey | None:
    try:
        pk = int(str(key_id))
    except (TypeError, ValueError):
        return None
    return ApiKey.objects.filter(tenant=tenant, pk=pk).first()


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
