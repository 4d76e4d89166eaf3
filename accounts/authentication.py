"""API-key authentication for DRF: ``xi-api-key`` header or ``Authorization: Bearer``.

Views name what they need in ``required_scope``; a key without it gets 403.
"""

from __future__ import annotations

from typing import Any

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


def raw_key_from_headers(headers: Any) -> str | None:
    key = headers.get("xi-api-key")
    if key:
        return str(key)
    auth = headers.get("authorization") or ""
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


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
            raise exceptions.PermissionDenied(
                f"This API key lacks the '{scope}' scope needed for this endpoint.", code="missing_permissions"
            )
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
