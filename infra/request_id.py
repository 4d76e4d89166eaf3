"""A request id on every request: taken from ``X-Request-ID`` when sane, else new,
returned as a header, put on every log line of the request and stored on history items."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from .logging import current_request_id

_SANE = re.compile(r"^[A-Za-z0-9._:-]{8,64}$")


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-ID", "")
        request_id = incoming if _SANE.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]
        # Not reset afterwards: a streaming body is produced after this returns and
        # its log lines belong to this request too. Each request runs in its own context.
        current_request_id.set(request_id)
        response = self.get_response(request)
        response["X-Request-ID"] = request_id
        response["request-id"] = request_id  # ElevenLabs' name: the id request stitching refers to
        return response
