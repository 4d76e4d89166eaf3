"""Who may send a large body: a staff session on the admin's upload routes, known before the body is read.

The admin's "Add model version" takes voice files (``TTS_MODEL_UPLOAD_MAX_BYTES``).
Every other body is bounded by ``TTS_MAX_BODY_BYTES``, and so is that route's,
unless the request comes from a staff session. daphne reads a request's whole
body before the application runs, so the decision has to come from the
headers alone, on the event loop, without a database query: a bound granted
from the path (as before) let anyone, without a session, send 512 MiB there.

So the admin gives a staff session a **grant**: a cookie signed with
``SECRET_KEY`` (Django's ``TimestampSigner``, its own salt), limited to
``/admin/``, HttpOnly, that names the user and the SHA-256 of the session key
and expires after ``TTS_MODEL_UPLOAD_GRANT_S`` (renewed by any admin page the
session views after half of it). ``grant_in_cookies`` checks it from a
request's cookies: the signature, its age, and that it belongs to the session
cookie sent with it. A grant alone, or with another session, is worth nothing.
The admin's view then checks the session itself (``BodyLimitMiddleware``,
after authentication, refuses a large body from anyone who is not staff any
more), so a demoted or logged-out user's grant lets in at most one body
before the 413. Logging out deletes it. This module imports no app.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse

GRANT_COOKIE = "tts_upload_grant"
ADMIN_PREFIX = "/admin/"
_SALT = "ttsplatform.upload_grant"


def _session_digest(session_key: str) -> str:
    return hashlib.sha256(session_key.encode()).hexdigest()[:32]


def issue_grant(user_pk: object, session_key: str) -> str:
    """A grant for ``user_pk``'s session ``session_key``."""
    return signing.TimestampSigner(salt=_SALT).sign(f"{user_pk}:{_session_digest(session_key)}")


def grant_valid(grant: str | None, session_key: str | None, *, max_age: int | None = None) -> bool:
    """Whether ``grant`` is ours, younger than ``max_age`` (the setting), and made for ``session_key``."""
    if not grant or not session_key:
        return False
    age = int(settings.TTS_MODEL_UPLOAD_GRANT_S) if max_age is None else max_age
    try:
        value = signing.TimestampSigner(salt=_SALT).unsign(grant, max_age=age)
    except signing.BadSignature:  # SignatureExpired included
        return False
    _, _, digest = value.partition(":")
    return hmac.compare_digest(digest.encode(), _session_digest(session_key).encode())


def grant_in_cookies(cookies: Mapping[str, str]) -> bool:
    """Whether a request's cookies carry a valid grant for the session cookie beside it."""
    return grant_valid(cookies.get(GRANT_COOKIE), cookies.get(settings.SESSION_COOKIE_NAME))


class UploadGrantMiddleware:
    """Gives a staff session's admin pages a grant (renewed past half its age); takes it from anyone else.

    After ``AuthenticationMiddleware``: it reads ``request.user``, only on ``/admin/`` paths.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith(ADMIN_PREFIX):
            return response
        current = request.COOKIES.get(GRANT_COOKIE)
        session = getattr(request, "session", None)
        session_key = session.session_key if session is not None else None
        user = getattr(request, "user", None)
        if user is not None and user.is_active and user.is_staff and session_key:
            age = settings.TTS_MODEL_UPLOAD_GRANT_S
            if not grant_valid(current, session_key, max_age=age // 2):
                response.set_cookie(
                    GRANT_COOKIE,
                    issue_grant(user.pk, session_key),
                    max_age=age,
                    path=ADMIN_PREFIX,
                    secure=settings.SESSION_COOKIE_SECURE,
                    httponly=True,
                    samesite=settings.SESSION_COOKIE_SAMESITE,
                )
        elif current:
            response.delete_cookie(GRANT_COOKIE, path=ADMIN_PREFIX, samesite=settings.SESSION_COOKIE_SAMESITE)
        return response
