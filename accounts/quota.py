"""Character quota: reserve before inference, refund on failure.

Reservations are one conditional UPDATE (``characters <= limit - n``), so
parallel requests on any number of processes never spend past the limit.
The quota lives in the database, not the cache: it stays enforced when Redis
is down.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, connections, router, transaction
from django.db.models import F, Field
from django.db.models.functions import Greatest
from django.utils import timezone

from .models import Plan, Tenant, Usage


class QuotaExceeded(Exception):
    def __init__(self, *, requested: int, used: int, limit: int) -> None:
        self.requested = requested
        self.used = used
        self.limit = limit
        super().__init__(
            f"This request needs {requested} characters but only {max(0, limit - used)} of the "
            f"{limit} characters in this billing period are left."
        )


def period_start(now: dt.datetime | None = None) -> dt.date:
    now = now or timezone.now()
    return now.date().replace(day=1)


def next_period_start(now: dt.datetime | None = None) -> dt.date:
    start = period_start(now)
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)


@dataclass
class Reservation:
    tenant_id: int
    period_start: dt.date
    characters: int
    settled: bool = False
    counted_request: bool = True

    @classmethod
    def nothing(cls, tenant_id: int) -> Reservation:
        """Nothing reserved (yet): refunding it does nothing."""
        return cls(tenant_id=tenant_id, period_start=dt.date.min, characters=0, settled=True)


def _ensure_usage_row(tenant: Tenant, period: dt.date) -> None:
    if Usage.objects.filter(tenant=tenant, period_start=period).exists():
        return
    try:
        with transaction.atomic():
            Usage.objects.create(tenant=tenant, period_start=period)
    except IntegrityError:
        pass  # another request created it first


def _column(name: str) -> str:
    field = Usage._meta.get_field(name)
    assert isinstance(field, Field) and field.column
    return str(field.column)


def _spend(characters: int, requests: int, tenant_id: int, period: dt.date, at_most: int) -> int:
    """The conditional UPDATE of a reservation, as SQL: rows updated (0 or 1).

    Every synthesis (and every cache hit) runs it; the ORM spent about 1 ms of CPU
    building this one statement (``QuerySet.update`` with ``F`` expressions), the
    statement itself runs in 0.1 ms.
    """
    connection = connections[router.db_for_write(Usage)]
    quote = connection.ops.quote_name
    meta = Usage._meta
    column = {name: quote(_column(name)) for name in ("characters", "requests", "tenant", "period_start")}
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {column['characters']} = {column['characters']} + %s, "
        f"{column['requests']} = {column['requests']} + %s "
        f"WHERE {column['tenant']} = %s AND {column['period_start']} = %s AND {column['characters']} <= %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [characters, requests, tenant_id, connection.ops.adapt_datefield_value(period), at_most])
        return int(cursor.rowcount)


def reserve_characters(
    *, tenant: Tenant, characters: int, now: dt.datetime | None = None, count_request: bool = True
) -> Reservation:
    """Spend ``characters`` of this period's quota now, or raise ``QuotaExceeded``.

    ``count_request=False`` adds characters to a request already counted (the
    later text pieces of one WebSocket utterance).
    """
    period = period_start(now)
    limit = tenant.plan.monthly_character_limit
    spend = (characters, 1 if count_request else 0, tenant.pk, period, limit - characters)
    updated = _spend(*spend)
    if not updated:
        # The period's first request: create its row, then try once more.
        _ensure_usage_row(tenant, period)
        updated = _spend(*spend)
    if not updated:
        used = Usage.objects.filter(tenant=tenant, period_start=period).values_list("characters", flat=True).first()
        raise QuotaExceeded(requested=characters, used=used or 0, limit=limit)
    return Reservation(tenant_id=tenant.pk, period_start=period, characters=characters, counted_request=count_request)


def refund_characters(reservation: Reservation, characters: int | None = None) -> None:
    """Give back all (or ``characters``) of a reservation, e.g. when synthesis failed."""
    amount = reservation.characters if characters is None else min(characters, reservation.characters)
    if amount <= 0 or reservation.settled:
        return
    whole = amount == reservation.characters
    Usage.objects.filter(tenant_id=reservation.tenant_id, period_start=reservation.period_start).update(
        characters=Greatest(F("characters") - amount, 0),
        requests=Greatest(F("requests") - (1 if whole and reservation.counted_request else 0), 0),
    )
    reservation.characters -= amount
    if whole:
        reservation.settled = True


def usage_for_period(tenant: Tenant, now: dt.datetime | None = None) -> Usage:
    period = period_start(now)
    usage = Usage.objects.filter(tenant=tenant, period_start=period).first()
    return usage or Usage(tenant=tenant, period_start=period)


def characters_per_request_limit(plan: Plan) -> int:
    """The most characters one synthesis request may carry on ``plan``: the plan's
    limit, capped by the deployment's ``TTS_MAX_CHARS_PER_REQUEST``. The one home of
    that rule (APIs, WebSocket pieces, dashboard and playground all read it here)."""
    return min(settings.TTS_MAX_CHARS_PER_REQUEST, plan.max_characters_per_request)


def audio_seconds_limit(plan: Plan) -> float:
    """The most seconds of audio one synthesis request may make on ``plan`` (``TTS_MAX_AUDIO_SECONDS``).

    With the speed floor (``TTS_MIN_SPEED``) it bounds the work behind every billed character.
    """
    return float(settings.TTS_MAX_AUDIO_SECONDS)


def seconds_until_next_period(now: dt.datetime | None = None) -> int:
    """Seconds until the quota resets (the ``Retry-After`` of a quota refusal); at least 1."""
    now = now or timezone.now()
    reset = dt.datetime.combine(next_period_start(now), dt.time.min, tzinfo=dt.UTC)
    return max(1, math.ceil((reset - now).total_seconds()))
