"""Unknown API routes: a JSON 404 in the caller's dialect, never Django's HTML page.

The last routes under ``/v1/``, ``/v2/`` and ``/api/`` catch whatever no endpoint
matched. ``/v1/audio/...`` is OpenAI's ground and answers ``{"error": ...}``;
every other API path answers ElevenLabs' ``{"detail": ...}``. The answer is
the same with ``DEBUG`` on (Django's technical 404 page never shows for an API
path) and does not depend on a key: an unknown route is 404 before auth.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponsePermanentRedirect
from django.urls import Resolver404, resolve
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from tts.errors import SynthesisError


class _AddSlash(Exception):
    def __init__(self, url: str) -> None:
        self.url = url


def _slash_target(request: Request) -> str | None:
    """``/api/docs`` -> ``/api/docs/`` (what APPEND_SLASH did before these routes caught everything)."""
    if request.method not in ("GET", "HEAD") or request.path_info.endswith("/"):
        return None
    try:
        match = resolve(request.path_info + "/")
    except Resolver404:
        return None
    view_class = getattr(match.func, "view_class", None)
    if view_class is not None and issubclass(view_class, UnknownRouteApi):
        return None
    query = request._request.META.get("QUERY_STRING", "")
    return request._request.path + "/" + (f"?{query}" if query else "")


class UnknownRouteApi(APIView):
    """Every method of every path it is routed: 404 ``not_found`` naming the method and path."""

    schema = None  # not an endpoint: no place in the OpenAPI schema
    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []
    error_dialect = "elevenlabs"

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        target = _slash_target(request)
        if target:
            raise _AddSlash(target)
        raise SynthesisError(f"No such endpoint: {request.method} {request.path}.", code="not_found", status=404)

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, _AddSlash):
            return HttpResponsePermanentRedirect(exc.url)  # type: ignore[return-value]
        return super().handle_exception(exc)


class OpenAIUnknownRouteApi(UnknownRouteApi):
    error_dialect = "openai"
