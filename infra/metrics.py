"""Prometheus metrics of HTTP traffic, and ``/metrics`` to scrape every metric of the process.

Request counts by route and status (429s also count as rate-limit refusals).
The speech metrics (syntheses, latency, characters, cache, engine queue,
models loaded) are defined by the layer that knows them: ``tts/synthesis/runs/metrics.py``.

Metrics live in the process that made them (prometheus-client's default
registry). daphne serves a site from one process, so that is exact per web
process; scale out with more pods/containers and let Prometheus sum over its
targets. It is *not* multiprocess mode: a server that forks workers sharing
one port (gunicorn with several uvicorn workers) would need
``PROMETHEUS_MULTIPROC_DIR`` and a ``MultiProcessCollector`` instead.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, generate_latest

from .ops_access import ops_access_refusal

HTTP_REQUESTS = Counter(
    "tts_http_requests", "HTTP requests answered, by route pattern, method and status.", ["route", "method", "status"]
)
RATE_LIMIT_REFUSALS = Counter(
    "tts_rate_limit_refusals", "Requests refused with 429 (rate limit, concurrency or quota), by route.", ["route"]
)
# --- HTTP -------------------------------------------------------------------


class RequestMetricsMiddleware:
    """Counts every response by its URL pattern (not the raw path: ids would explode the label set)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = "/" + match.route if match is not None and match.route else "unmatched"
        HTTP_REQUESTS.labels(route, request.method or "", str(response.status_code)).inc()
        if response.status_code == 429:
            RATE_LIMIT_REFUSALS.labels(route).inc()
        return response


def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus text format; behind ``METRICS_TOKEN`` and/or ``OPS_ALLOWED_NETWORKS`` when set."""
    refusal = ops_access_refusal(request, route="metrics")
    if refusal is not None:
        return refusal
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
