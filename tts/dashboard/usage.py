"""The usage page: characters and requests per day over a chosen range, split by API key, voice,
model or source, with a CSV export of the same figures (``tts.usage.breakdown``)."""

from __future__ import annotations

import io

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.tenancy import TenantRequest, dashboard_context, member_required
from infra.csv_cells import csv_writer
from tts.dashboard.forms import UsageRangeForm
from tts.usage import BREAKDOWN_LABELS, UsageTable, content_disposition, usage_breakdown

#: At most this many series in a chart; the rest are summed as "Other" (the table and CSV keep them all).
CHART_SERIES = 8
COLORS = ["#3b6fd8", "#d0843b", "#2f9e6e", "#b34e9a", "#8a6d3b", "#4aa3c7", "#c44d4d", "#6b6fb3", "#9aa0ab"]


def _series_colors(table: UsageTable) -> dict[str, str]:
    """One colour per series for both charts: by rank in characters, then requests (a series that
    only made requests comes after those with characters); past ``CHART_SERIES`` they are "Other"."""
    ranked = list(table.totals("characters"))
    ranked += [label for label in table.totals("requests") if label not in ranked]
    return {label: COLORS[i] for i, label in enumerate(ranked[:CHART_SERIES])}


def _chart(table: UsageTable, metric: str, colors: dict[str, str]) -> dict[str, object]:
    totals = table.totals(metric)
    shown = [label for label in colors if label in totals]
    datasets = [
        {"label": label, "data": table.series[metric][label], "backgroundColor": colors[label]} for label in shown
    ]
    rest = [label for label in totals if label not in colors]
    if rest:
        other = [sum(table.series[metric][label][i] for label in rest) for i in range(len(table.days))]
        datasets.append({"label": "Other", "data": other, "backgroundColor": COLORS[-1]})
    return {"labels": [d.isoformat() for d in table.days], "datasets": datasets}


@require_GET
@member_required
def usage(request: TenantRequest) -> HttpResponse:
    form = UsageRangeForm(request.GET)
    if not form.is_valid():
        context = dashboard_context(request, page="usage", form=form, table=None)
        return render(request, "dashboard/usage.html", context, status=400)
    data = form.cleaned_data
    table = usage_breakdown(request.tenant, data["date_from"], data["date_to"], data["breakdown"])
    char_totals = table.totals("characters")
    request_totals = table.totals("requests")
    summary = [
        {"label": label, "characters": int(chars), "requests": int(request_totals.get(label, 0))}
        for label, chars in char_totals.items()
        if chars or request_totals.get(label)
    ]
    colors = _series_colors(table)
    query = request.GET.copy()
    query["date_from"], query["date_to"] = data["date_from"].isoformat(), data["date_to"].isoformat()
    query["breakdown"] = data["breakdown"]
    context = dashboard_context(
        request,
        page="usage",
        form=form,
        table=table,
        breakdown_label=BREAKDOWN_LABELS[data["breakdown"]],
        summary=summary,
        total_characters=sum(s["characters"] for s in summary),
        total_requests=sum(s["requests"] for s in summary),
        charts={"characters": _chart(table, "characters", colors), "requests": _chart(table, "requests", colors)},
        csv_query=query.urlencode(),
        first=data["date_from"],
        last=data["date_to"],
    )
    return render(request, "dashboard/usage.html", context)


@require_GET
@member_required
def usage_csv(request: TenantRequest) -> HttpResponse:
    form = UsageRangeForm(request.GET)
    if not form.is_valid():
        errors = "; ".join(f"{name}: {' '.join(str(m) for m in e)}" for name, e in form.errors.items())
        return HttpResponse(errors, status=400, content_type="text/plain; charset=utf-8")
    data = form.cleaned_data
    table = usage_breakdown(request.tenant, data["date_from"], data["date_to"], data["breakdown"])
    out = io.StringIO()
    writer = csv_writer(out)  # key names, voices and models a tenant named: never a formula
    dimension = BREAKDOWN_LABELS[data["breakdown"]].lower().replace(" ", "_")
    writer.writerow(["day", dimension, "characters", "requests", "audio_seconds"])
    for day, label, chars, requests, seconds in table.rows():
        writer.writerow([day.isoformat(), label, chars, requests, f"{seconds:.3f}"])
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    name = f"usage_{request.tenant.slug}_{data['date_from']}_{data['date_to']}_{data['breakdown']}.csv"
    response["Content-Disposition"] = content_disposition(name)
    return response
