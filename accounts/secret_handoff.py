"""A new API key's secret, carried from the POST that made it to the one page view that shows it
(post/redirect/get), without being stored anywhere on the server.

The secret travels in a cookie that only this server can read: encrypted and authenticated
(Fernet, with a key derived from ``SECRET_KEY``), bound to the key it belongs to, limited to the
page that shows it (``path``), ``HttpOnly``, ``SameSite=Strict``, ``Secure`` over HTTPS, and
valid for ``HANDOFF_SECONDS``. That page reads it once and deletes it, so a reload (or the back
button) shows nothing and creates nothing.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from django.http import HttpRequest, HttpResponse
from django.utils.crypto import salted_hmac

COOKIE = "tts_new_key"
#: How long the redirect may take to arrive: the secret is unreadable after this.
HANDOFF_SECONDS = 120


def _fernet() -> Fernet:
    key = salted_hmac("accounts.secret_handoff", "new api key", algorithm="sha256").digest()
    return Fernet(base64.urlsafe_b64encode(key))


def hand_over(response: HttpResponse, request: HttpRequest, *, key_id: int, secret: str, path: str) -> None:
    """Set the cookie that carries ``secret`` of key ``key_id`` to the page at ``path``."""
    token = _fernet().encrypt(f"{key_id}:{secret}".encode()).decode()
    response.set_cookie(
        COOKIE,
        token,
        max_age=HANDOFF_SECONDS,
        path=path,
        secure=request.is_secure(),
        httponly=True,
        samesite="Strict",
    )


def received(request: HttpRequest, *, key_id: int) -> str | None:
    """The secret of key ``key_id`` if this request carries it (and it has not expired), else None."""
    token = request.COOKIES.get(COOKIE)
    if not token:
        return None
    try:
        owner, _, secret = _fernet().decrypt(token.encode(), ttl=HANDOFF_SECONDS).decode().partition(":")
    except (InvalidToken, UnicodeDecodeError):
        return None
    return secret if owner == str(key_id) and secret else None


def forget(response: HttpResponse, *, path: str) -> None:
    """Delete the cookie: the page that showed the secret shows it once."""
    response.delete_cookie(COOKIE, path=path, samesite="Strict")
