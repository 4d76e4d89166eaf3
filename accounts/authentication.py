"""API keys to tenants: the one rule HTTP (DRF) and both WebSocket consumers use.

Where a key may travel (the same table is in docs/api.md):

=================================  ===========================================
``xi-api-key: <key>`` header       every route (ElevenLabs SDKs send this)
``Authorization: Bearer <key>``    every route (OpenAI SDKs send this)
``?xi-api-key=`` / ``?xi_api_key=``  WebSockets only (browsers cannot set headers)
``xi_api_key`` / ``xi-api-key`` /   the first message of ``stream-input``
``authorization: "Bearer <key>"``  (ElevenLabs' protocol)
=================================  ===========================================

Views name what they need in ``required_scope``, consumers pass it to
:func:`api_key_for_scope`; a key without it is refused (403 / close 4003).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from .keys import InvalidApiKey, api_key_authenticate
from .models import ApiKey, Tenant


class ApiKeyUser:
    """What ``request.user`` is for an API request: the tenant behind a key."""

    is_authenticated = True
    is_anonymous = False
    is_active = True

    def __init__(self, api_key: ApiKey) -> None:
        self.api_key = api_key
        self.tenant: Tenant = api_key.tenant
        self.pk = None

    def __str__(self) -> str:
        return f"api-key:{self.api_key.prefix}"


def _bearer(value: object) -> str | None:
    scheme, _, token = str(value or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def raw_key_from_headers(headers: Any) -> str | None:
    """The key in ``xi-api-key`` or ``Authorization: Bearer`` (case-insensitive header names)."""
    key = headers.get("xi-api-key")
    if key and str(key).strip():
        return str(key).strip()
    return _bearer(headers.get("authorization"))


def raw_key_from_scope(scope: Mapping[str, Any]) -> str | None:
    """The key of a WebSocket handshake: its headers, else ``?xi-api-key=`` / ``?xi_api_key=``."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
    raw = raw_key_from_headers(headers)
    if raw:
        return raw
    query = parse_qs(bytes(scope.get("query_string") or b"").decode("latin-1"))
    for name in ("xi-api-key", "xi_api_key"):
        values = [v.strip() for v in query.get(name, []) if v.strip()]
        if values:
            return values[0]
    return None


def raw_key_from_message(message: Mapping[str, Any]) -> str | None:
    """The key in the first message of ``stream-input``, as ElevenLabs' protocol sends it."""
    for name in ("xi_api_key", "xi-api-key"):
        value = message.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return _bearer(message.get("authorization"))


class MissingScope(Exception):
    """The key is valid but lacks the scope the route needs."""

    code = "missing_permissions"

    def __init__(self, scope: str) -> None:
        super().__init__(f"This API key lacks the '{scope}' scope needed for this endpoint.")
        self.scope = scope


def api_key_for_scope(raw_key: str, scope: str | None) -> ApiKey:
    """The live key behind ``raw_key`` (with its tenant), if it carries ``scope``.

    ``InvalidApiKey`` (401: unknown, malformed, revoked, expired, tenant suspended)
    or ``MissingScope`` (403). Blocking (ORM): from async code, run it in a thread.
    """
    key = api_key_authenticate(raw_key)
    if scope and scope not in (key.scopes or []):
        raise MissingScope(scope)
    return key


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[ApiKeyUser, ApiKey] | None:
        raw = raw_key_from_headers(request.headers)
        if raw is None:
            return None
        try:
            key = api_key_authenticate(raw)
        except InvalidApiKey as exc:
            raise exceptions.AuthenticationFailed(str(exc), code=exc.code) from None
        return ApiKeyUser(key), key

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) when no key was given.
        return 'Bearer realm="api"'


class HasApiKey(BasePermission):
    """Needs an authenticated key carrying the view's ``required_scope`` (if any)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not isinstance(request.auth, ApiKey):
            raise exceptions.NotAuthenticated(
                "Missing API key: send it in the 'xi-api-key' header or as 'Authorization: Bearer <key>'."
            )
        scope = getattr(view, "required_scope", None)
        if scope and scope not in (request.auth.scopes or []):
            exc = MissingScope(scope)
            raise exceptions.PermissionDenied(str(exc), code=exc.code)
        return True


def request_tenant(request: Request) -> Tenant:
    """The tenant behind an authenticated API request (views run after HasApiKey)."""
    user = request.user
    assert isinstance(user, ApiKeyUser), "request_tenant() needs an API-key-authenticated request"
    return user.tenant


def request_api_key(request: Request) -> ApiKey:
    key = request.auth
    assert isinstance(key, ApiKey), "request_api_key() needs an API-key-authenticated request"
    return key
