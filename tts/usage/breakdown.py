"""Usage per UTC day broken down by API key, voice, model or source, read from the history.

Every attempt and job writes one history item with the characters it was
charged (retention empties old rows but keeps them), so grouping the history
gives the same totals as the daily roll-up, split the way the caller asks.
One grouped query over the (tenant, created_at) index, plus one for key names.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db.models import Count, Sum
from django.db.models.functions import TruncDate

from accounts.models import ApiKey, Tenant
from tts.models import SynthesisRecord

#: ElevenLabs' ``breakdown_type`` names we answer, and the history column each groups by.
BREAKDOWNS: dict[str, str | None] = {
    "none": None,
    "api_keys": "api_key_id",
    "voice": "voice_id",
    "model": "model_id",
    "request_source": "source",
}
BREAKDOWN_LABELS = {
    "none": "Total",
    "api_keys": "API key",
    "voice": "Voice",
    "model": "Model",
    "request_source": "Source",
}
METRICS = ("characters", "requests", "audio_seconds")
NO_KEY = "No API key (dashboard)"
ALL = "All"


@dataclass
class UsageTable:
    """Per-day series, one per breakdown value, for each metric; days without usage are zeros."""

    days: list[dt.date]
    breakdown: str
    series: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # metric -> label -> values

    def totals(self, metric: str) -> dict[str, float]:
        """Each label's total over the range, largest first."""
        sums = {label: sum(values) for label, values in self.series[metric].items()}
        return dict(sorted(sums.items(), key=lambda kv: (-kv[1], kv[0])))

    def rows(self) -> list[tuple[dt.date, str, int, int, float]]:
        """(day, label, characters, requests, audio seconds) for each day and label with usage."""
        out = []
        for label in self.series["characters"]:
            for i, day in enumerate(self.days):
                chars = int(self.series["characters"][label][i])
                requests = int(self.series["requests"][label][i])
                seconds = round(self.series["audio_seconds"][label][i], 3)
                if chars or requests:
                    out.append((day, label, chars, requests, seconds))
        return sorted(out, key=lambda r: (r[0], r[1]))


def _key_labels(tenant: Tenant) -> dict[int | None, str]:
    labels: dict[int | None, str] = {None: NO_KEY}
    for pk, name, prefix in ApiKey.objects.filter(tenant=tenant).values_list("pk", "name", "prefix"):
        labels[pk] = f"{name} (tts_{prefix})"
    return labels


def usage_breakdown(tenant: Tenant, first: dt.date, last: dt.date, breakdown: str = "none") -> UsageTable:
    """Characters, requests and audio seconds per UTC day in ``[first, last]``, split by ``breakdown``."""
    column = BREAKDOWNS[breakdown]
    days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
    index = {day: i for i, day in enumerate(days)}
    start = dt.datetime.combine(first, dt.time.min, tzinfo=dt.UTC)
    end = dt.datetime.combine(last + dt.timedelta(days=1), dt.time.min, tzinfo=dt.UTC)
    group = ["day", column] if column else ["day"]
    rows = (
        SynthesisRecord.objects.filter(tenant=tenant, created_at__gte=start, created_at__lt=end)
        .annotate(day=TruncDate("created_at", tzinfo=dt.UTC))
        .values(*group)
        .annotate(characters=Sum("characters"), requests=Count("id"), audio_seconds=Sum("duration_s"))
        .order_by()
    )
    key_labels = _key_labels(tenant) if breakdown == "api_keys" else {}
    table = UsageTable(days=days, breakdown=breakdown, series={m: {} for m in METRICS})
    for row in rows:
        if column is None:
            label = ALL
        elif breakdown == "api_keys":
            label = key_labels.get(row[column], f"Deleted key #{row[column]}")
        else:
            label = str(row[column] or "unknown")
        i = index.get(row["day"])
        if i is None:
            continue
        for metric in METRICS:
            values = table.series[metric].setdefault(label, [0.0] * len(days))
            values[i] += float(row[metric] or 0)
    if column is None and not table.series["characters"]:
        # No usage at all: the total is still a series, of zeros (a breakdown simply has no labels).
        for metric in METRICS:
            table.series[metric][ALL] = [0.0] * len(days)
    return table
