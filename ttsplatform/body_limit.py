"""Request bodies bounded before anything reads them whole (docs/limits.md).

Three places, one rule (``TTS_MAX_BODY_BYTES``, 1 MiB; the job routes
``TTS_JOB_MAX_BODY_BYTES``, 4 MiB, because a job takes up to
``Plan.job_max_characters`` of text; the admin's model upload
``TTS_MODEL_UPLOAD_MAX_BYTES``, 256 MiB, only for a staff session: its grant
cookie, ``ttsplatform.upload_grant``, read from the headers before the body,
and the session itself once Django authenticated it; anyone else gets the
plain limit there too):

* **daphne** (``install_daphne_bound``): Twisted reads a request's whole body
  into memory or a temporary file before daphne hands it to the application,
  so a bound in Django alone comes after a 1 GB upload has already been
  stored. The request class daphne uses is replaced by one that answers 413
  as soon as ``Content-Length`` is over the limit, or as soon as a chunked
  body passes it, and closes the connection without reading the rest.
* **the ASGI handler** (``BodyLimitASGI``): the same for any other ASGI server
  (uvicorn, hypercorn), before Django spools the body to a temporary file.
* **Django middleware** (``BodyLimitMiddleware``, after authentication):
  ``Content-Length`` under WSGI and in Django's test client, and under any
  server the last word on the upload route: a large body there needs a user
  who is staff now, whatever grant came with it.

The 413 is answered before authentication (API keys), with or without a key,
in the caller's dialect: OpenAI's ``{"error": ...}`` on ``/v1/audio/speech``,
ElevenLabs' ``{"detail": ...}`` everywhere else. This module imports no app.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.cookie import parse_cookie

from .upload_grant import grant_in_cookies

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]

OPENAI_PATHS = ("/v1/audio/",)
JOB_PATHS = ("/v1/jobs", "/jobs/new/")
# A voice matched from recordings (docs/matching.md): files of up to TTS_MATCH_MAX_FILE_BYTES each.
MATCH_PATHS = ("/v1/voices/add", "/voices/match/")
# The admin's "Add model version" takes the voice files as an upload (``TTS_MODEL_UPLOAD_MAX_BYTES``),
# from a staff session only.
MODEL_UPLOAD_PATHS = ("/admin/tts/modelversion/add/",)


def body_limit_for(path: str, *, staff_upload: bool = False) -> int:
    """The most bytes a body sent to ``path`` may have; 0 = no bound.

    ``staff_upload``: the request comes from a staff session (its grant, or its user).
    """
    if staff_upload and path.startswith(MODEL_UPLOAD_PATHS):
        return int(settings.TTS_MODEL_UPLOAD_MAX_BYTES)
    if path.startswith(JOB_PATHS):
        return int(settings.TTS_JOB_MAX_BODY_BYTES)
    if path.startswith(MATCH_PATHS):
        return int(settings.TTS_MATCH_MAX_BODY_BYTES)
    return int(settings.TTS_MAX_BODY_BYTES)


def too_large_body(path: str, limit: int) -> bytes:
    """The 413 body in the dialect of ``path``; it names the limit."""
    message = f"The request body is larger than {limit} bytes, the most this server accepts."
    if path.startswith(MODEL_UPLOAD_PATHS) and limit == int(settings.TTS_MAX_BODY_BYTES):
        message += " Larger uploads need a staff session: sign in to the admin and open the form again."
    if path.startswith(OPENAI_PATHS):
        body: dict[str, Any] = {
            "error": {"message": message, "type": "invalid_request_error", "param": None, "code": "body_too_large"}
        }
    else:
        body = {"detail": {"status": "body_too_large", "message": message}}
    return json.dumps(body).encode()


def _header_length(value: bytes | str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# --- Django (WSGI, test client) -----------------------------------------------


class BodyLimitMiddleware:
    """413 for a ``Content-Length`` over the limit, before any view or parser reads it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        length = _header_length(request.META.get("CONTENT_LENGTH"))
        limit = body_limit_for(request.path)
        if limit and length is not None and length > limit and request.path.startswith(MODEL_UPLOAD_PATHS):
            user = getattr(request, "user", None)  # the session, checked now: a grant is not enough here
            limit = body_limit_for(request.path, staff_upload=bool(user and user.is_active and user.is_staff))
        if limit and length is not None and length > limit:
            return HttpResponse(too_large_body(request.path, limit), status=413, content_type="application/json")
        return self.get_response(request)


# --- ASGI ---------------------------------------------------------------------


class BodyTooLarge(Exception):
    """Raised from ``receive`` when the body passes its limit; the wrapper answers 413."""


class BodyLimitASGI:
    """Wraps an HTTP ASGI application: counts the body as it arrives and stops at the limit."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        headers = dict(scope.get("headers") or [])
        limit = body_limit_for(path, staff_upload=_granted(path, headers.get(b"cookie")))
        if not limit:
            await self.app(scope, receive, send)
            return
        length = _header_length(headers.get(b"content-length"))
        if length is not None and length > limit:
            await _send_413(send, path, limit)
            return
        received = 0
        started = False

        async def bounded_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, bounded_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await _send_413(send, path, limit)


def _granted(path: str, cookie_header: bytes | str | None) -> bool:
    """Whether a request to an upload route carries a staff session's grant (from its Cookie header)."""
    if not cookie_header or not path.startswith(MODEL_UPLOAD_PATHS):
        return False
    text = cookie_header.decode("latin-1") if isinstance(cookie_header, bytes) else cookie_header
    return grant_in_cookies(parse_cookie(text))


async def _send_413(send: Send, path: str, limit: int) -> None:
    body = too_large_body(path, limit)
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


# --- daphne (Twisted) ---------------------------------------------------------


def install_daphne_bound() -> bool:
    """Make daphne refuse oversized bodies while they arrive; False when daphne is not installed.

    Called from the ASGI module, which daphne imports before it listens.
    """
    try:
        from daphne import http_protocol
    except ImportError:
        return False
    if getattr(http_protocol.WebRequest, "_tts_body_bound", False):
        return True

    base = http_protocol.WebRequest

    class BoundedWebRequest(base):  # type: ignore[misc, valid-type]
        """daphne's request, answering 413 and hanging up once the body passes the limit."""

        _tts_body_bound = True

        def gotLength(self, length: int | None) -> None:
            self._tts_received = 0
            self._tts_refused = False
            self._tts_path = _channel_path(self)
            # The headers are in (Twisted parsed them and the cookies first), the body is not.
            cookies = self.requestHeaders.getRawHeaders(b"cookie") or []
            granted = _granted(self._tts_path, b"; ".join(cookies))
            self._tts_limit = body_limit_for(self._tts_path, staff_upload=granted)
            if self._tts_limit and length is not None and length > self._tts_limit:
                self._tts_refuse()
                return
            super().gotLength(length)

        def handleContentChunk(self, data: bytes) -> None:
            if self._tts_refused:
                return
            self._tts_received += len(data)
            if self._tts_limit and self._tts_received > self._tts_limit:
                self._tts_refuse()
                return
            super().handleContentChunk(data)

        def process(self) -> Any:
            if getattr(self, "_tts_refused", False):
                return None
            return super().process()

        def _tts_refuse(self) -> None:
            import io

            self._tts_refused = True
            old = getattr(self, "content", None)
            if old is not None:
                old.close()
            self.content = io.BytesIO()
            body = too_large_body(self._tts_path, self._tts_limit)
            head = (
                b"HTTP/1.1 413 Request Entity Too Large\r\n"
                b"Content-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n"
                b"Connection: close\r\n\r\n"
            )
            transport = self.channel.transport
            transport.write(head + body)
            transport.loseConnection()
            logger.info("refused a request body over %d bytes to %s", self._tts_limit, self._tts_path)

    http_protocol.WebRequest = BoundedWebRequest  # type: ignore[misc]
    return True


def _channel_path(request: Any) -> str:
    """The request's path while its body is still arriving (Twisted parses it into the channel first)."""
    raw = getattr(request.channel, "_path", b"") or b""
    try:
        return raw.split(b"?", 1)[0].decode("latin1")
    except Exception:
        return ""
