"""A request id on every request: taken from ``X-Request-ID`` when sane, else new,
returned as a header, put on every log line of the request and stored on history items.

HTTP gets it from ``RequestIdMiddleware`` (Django); a WebSocket connection from
``WebSocketRequestIdMiddleware`` (ASGI, around the Channels stack): one id for
the connection, in ``scope["request_id"]`` (the consumer stores it on history
items and quotes it in error messages) and on every log line the connection's
handlers write. (No response header: daphne drops headers of ``websocket.accept``.)
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.http import HttpRequest, HttpResponse

from .client_address import client_address_from_scope
from .logging import current_request_id

logger = logging.getLogger(__name__)

_SANE = re.compile(r"^[A-Za-z0-9._:-]{8,64}$")

_Scope = MutableMapping[str, Any]
_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]


def request_id_from(incoming: str) -> str:
    """The caller's id when it is sane (8-64 of ``A-Za-z0-9._:-``), else a new one."""
    return incoming if _SANE.match(incoming) else uuid.uuid4().hex


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_from(request.headers.get("X-Request-ID", ""))
        request.request_id = request_id  # type: ignore[attr-defined]
        # Not reset afterwards: a streaming body is produced after this returns and
        # its log lines belong to this request too. Each request runs in its own context.
        current_request_id.set(request_id)
        response = self.get_response(request)
        response["X-Request-ID"] = request_id
        response["request-id"] = request_id  # ElevenLabs' name: the id request stitching refers to
        return response


class WebSocketRequestIdMiddleware:
    """ASGI middleware for the websocket stack: a request id per connection."""

    def __init__(self, inner: Callable[[_Scope, _Receive, _Send], Awaitable[None]]) -> None:
        self.inner = inner

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        headers = dict(scope.get("headers") or [])
        request_id = request_id_from(headers.get(b"x-request-id", b"").decode("latin-1"))
        # The consumer's handlers (and the threads and tasks they start) run in this
        # context, so their log lines carry the id.
        current_request_id.set(request_id)

        path = scope.get("path", "")
        started = time.monotonic()
        logger.info("websocket %s from %s: connecting", path, client_address_from_scope(scope))
        try:
            await self.inner({**scope, "request_id": request_id}, receive, send)
        finally:
            logger.info("websocket %s: ended after %.1f s", path, time.monotonic() - started)
