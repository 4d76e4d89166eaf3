"""Liveness and readiness probes.

``/healthz`` says the process answers (liveness: restart me if not).
``/readyz`` says it can serve (readiness: send me traffic): the database
answers, the cache (Redis) answers when configured, and every active model
version is loaded and warmed in this process. Otherwise 503 with the reason.
Both skip authentication and are cheap enough to probe every few seconds.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

from infra.metrics import metrics_view
from infra.ops_access import ops_access_refusal
from tts.catalogue import get_lifecycle
from tts.synthesis import draining


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _unavailable(reason: str, **extra: object) -> JsonResponse:
    response = JsonResponse({"status": "unavailable", "reason": reason, **extra}, status=503)
    response["Retry-After"] = "5"
    return response


def _check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        # Drop the broken connection so the next probe reconnects.
        connection.close()
        return f"database: {exc.__class__.__name__}"
    return ""


def _check_cache() -> str:
    if not settings.REDIS_URL:
        return ""  # local-memory cache: nothing that can be down
    key = f"readyz:{os.getpid()}"
    token = uuid.uuid4().hex
    try:
        cache.set(key, token, timeout=10)
        if cache.get(key) != token:
            return "cache: wrote a value and read back another"
    except Exception as exc:
        return f"cache: {exc.__class__.__name__}"
    return ""


def readyz(request: HttpRequest) -> HttpResponse:
    refusal = ops_access_refusal(request, route="readyz")
    if refusal is not None:
        return refusal
    if draining.is_set():
        return _unavailable("shutting down")
    for check in (_check_database, _check_cache):
        reason = check()
        if reason:
            return _unavailable(reason)
    lifecycle = get_lifecycle()
    if lifecycle is None:
        # Lifecycle off (TTS_MODEL_LIFECYCLE=false): versions load on first use.
        return JsonResponse({"status": "ready", "models": "loaded on first use"})
    state = lifecycle.readiness()
    if not state.ready:
        return _unavailable(state.reason, models=state.models)
    return JsonResponse({"status": "ready", "models": state.models, "warmup_seconds": lifecycle.warmup_seconds})


class ProbeMiddleware:
    """Answers the probe and scrape routes before host validation and HTTPS redirects.

    Kubelets and Prometheus call pods by IP over plain HTTP; ``ALLOWED_HOSTS``
    would refuse that host and ``SECURE_SSL_REDIRECT`` would bounce it, so
    these three paths are served first, as they are (they take no input).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        view = _PROBES.get(request.path_info)
        if view is not None and request.method in ("GET", "HEAD"):
            return view(request)
        return self.get_response(request)


_PROBES: dict[str, Callable[[HttpRequest], HttpResponse]] = {
    "/healthz": healthz,
    "/readyz": readyz,
    "/metrics": metrics_view,
}
