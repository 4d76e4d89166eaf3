"""A new API key's secret, shown once on the page after the POST, and never stored on the server.

The dashboard creates a key with post/redirect/get: the POST redirects to the
key list, which shows the secret once (a reload shows nothing and creates
nothing). The secret used to wait for that page in the session, and sessions
are database rows (``django.contrib.sessions``' default backend): every secret
made in the dashboard sat in the session table until the next page view, for
good when that view never came, and in every backup of the table.

Now it travels in two halves, each worthless alone. The session keeps a
one-time pad (random bytes as long as the secret) with the key's id; a cookie,
signed with ``SECRET_KEY`` (its own salt), HttpOnly, ``SameSite=Strict``,
limited to ``/keys/`` and expiring after :data:`SHOW_FOR_S`, carries the
secret XOR the pad. The list page joins them once: it pops the pad from the
session and deletes the cookie, so a reload, the back button or a replayed
cookie shows nothing, and neither the session table nor the browser's cookie
store ever holds the secret.
"""

from __future__ import annotations

import base64
import secrets

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse

SESSION_KEY = "new_api_key"
COOKIE = "tts_new_key"
COOKIE_PATH = "/keys/"
#: How long the redirect has to reach the list page (seconds).
SHOW_FOR_S = 300
_SALT = "accounts.secret_once"


def _xor(data: bytes, pad: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(data, pad, strict=True))


def hold_secret(request: HttpRequest, response: HttpResponse, *, tenant_id: int, key_id: int, secret: str) -> None:
    """Keep ``secret`` for the next view of the list: the pad in the session, the masked secret in a cookie."""
    raw = secret.encode()
    pad = secrets.token_bytes(len(raw))
    request.session[SESSION_KEY] = {  # type: ignore[attr-defined]
        "tenant_id": tenant_id,
        "key_id": key_id,
        "pad": base64.b64encode(pad).decode(),
    }
    masked = base64.b64encode(_xor(raw, pad)).decode()
    response.set_cookie(
        COOKIE,
        signing.dumps({"t": tenant_id, "k": key_id, "m": masked}, salt=_SALT),
        max_age=SHOW_FOR_S,
        path=COOKIE_PATH,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Strict",
    )


def take_secret(request: HttpRequest, *, tenant_id: int) -> tuple[int, str] | None:
    """``(key id, secret)`` once, for the tenant that made it; ``None`` on any other view.

    Forgets the session's half; the page answered must :func:`forget_cookie` the other.
    """
    held = request.session.pop(SESSION_KEY, None)  # type: ignore[attr-defined]
    cookie = request.COOKIES.get(COOKIE)
    if not isinstance(held, dict) or cookie is None or held.get("tenant_id") != tenant_id:
        return None
    try:
        data = signing.loads(cookie, salt=_SALT, max_age=SHOW_FOR_S)
        pad = base64.b64decode(held["pad"])
        masked = base64.b64decode(data["m"])
        if data.get("t") != tenant_id or data.get("k") != held.get("key_id") or len(pad) != len(masked):
            return None
        return int(data["k"]), _xor(masked, pad).decode()
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        return None


def forget_cookie(request: HttpRequest, response: HttpResponse) -> None:
    """Delete the masked half from the browser, if it sent it."""
    if COOKIE in request.COOKIES:
        response.delete_cookie(COOKIE, path=COOKIE_PATH, samesite="Strict")
