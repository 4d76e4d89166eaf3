"""A new API key's secret, carried from the POST that made it to the one page view that shows it
(post/redirect/get), without being stored anywhere on the server.

Both places that make keys use it: the admin's add form and the dashboard's Keys page. (The
dashboard used to keep the secret in the session until the next page view, and sessions are
database rows: every secret made there sat in the session table, for good when that view never
came.)

The secret travels in a cookie that only this server can read: encrypted and authenticated
(Fernet, with a key derived from ``SECRET_KEY``), bound to the key it belongs to, limited to the
page that shows it (``path``), ``HttpOnly``, ``SameSite=Strict``, ``Secure`` over HTTPS, and
valid for ``HANDOFF_SECONDS``. It is good for one view: the session holds a random nonce (not
the secret) that the cookie must carry too, and the page that shows the secret takes it out, so
a reload, the back button or the same cookie sent again shows nothing and creates nothing.
"""

from __future__ import annotations

import base64
import hmac
import secrets

from cryptography.fernet import Fernet, InvalidToken
from django.http import HttpRequest, HttpResponse
from django.utils.crypto import salted_hmac

COOKIE = "tts_new_key"
#: How long the redirect may take to arrive: the secret is unreadable after this.
HANDOFF_SECONDS = 120
#: The session's half: a nonce that makes the cookie good for one view (never the secret).
SESSION_NONCE = "new_key_nonce"


def _fernet() -> Fernet:
    key = salted_hmac("accounts.secret_handoff", "new api key", algorithm="sha256").digest()
    return Fernet(base64.urlsafe_b64encode(key))


def hand_over(response: HttpResponse, request: HttpRequest, *, key_id: int, secret: str, path: str) -> None:
    """Set the cookie that carries ``secret`` of key ``key_id`` to the page at ``path``."""
    nonce = secrets.token_urlsafe(16)
    request.session[SESSION_NONCE] = nonce  # type: ignore[attr-defined]
    token = _fernet().encrypt(f"{key_id}:{nonce}:{secret}".encode()).decode()
    response.set_cookie(
        COOKIE,
        token,
        max_age=HANDOFF_SECONDS,
        path=path,
        secure=request.is_secure(),
        httponly=True,
        samesite="Strict",
    )


def received_key(request: HttpRequest, *, key_id: int | None = None) -> tuple[int, str] | None:
    """``(key id, secret)`` this request carries, once (the session's nonce is used up); else None.

    With ``key_id``, only the secret of that key; without, of whichever key, and the caller
    checks that the user may see it (the dashboard: a key of the current tenant).
    """
    token = request.COOKIES.get(COOKIE)
    if not token:
        return None
    try:
        owner, _, rest = _fernet().decrypt(token.encode(), ttl=HANDOFF_SECONDS).decode().partition(":")
    except (InvalidToken, UnicodeDecodeError):
        return None
    nonce, _, secret = rest.partition(":")
    if not owner.isdigit() or not secret or (key_id is not None and int(owner) != key_id):
        return None
    session = request.session  # type: ignore[attr-defined]
    expected = session.get(SESSION_NONCE)
    if not isinstance(expected, str) or not hmac.compare_digest(expected.encode(), nonce.encode()):
        return None  # shown already, or sent from another session
    del session[SESSION_NONCE]
    return int(owner), secret


def received(request: HttpRequest, *, key_id: int) -> str | None:
    """The secret of key ``key_id`` if this request carries it (and it has not expired or been shown), else None."""
    got = received_key(request, key_id=key_id)
    return got[1] if got is not None else None


def forget(response: HttpResponse, *, path: str) -> None:
    """Delete the cookie: the page that showed the secret shows it once."""
    response.delete_cookie(COOKIE, path=path, samesite="Strict")
