"""Which tenant a dashboard request acts for.

The current tenant lives in the session under ``current_tenant_id`` (the
playground's WebSocket consumer reads the same key). Every dashboard view
goes through ``member_required``, which checks the user still belongs to
that tenant on every request, so removing a membership takes effect at once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec
from urllib.parse import urlparse

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import render

from .models import Membership, Tenant
from .selectors import membership_get, memberships_for_user

SESSION_TENANT_KEY = "current_tenant_id"

P = ParamSpec("P")


class TenantRequest(HttpRequest):
    """What a view behind ``member_required`` receives (for type checkers)."""

    membership: Membership
    memberships: list[Membership]
    tenant: Tenant


def current_membership(request: HttpRequest) -> Membership | None:
    """The membership for the session's tenant, else the user's first one (remembered).

    Loads all of the user's memberships in one query; the switcher shows them too.
    """
    memberships = list(memberships_for_user(request.user))
    request.memberships = memberships  # type: ignore[attr-defined]
    wanted = request.session.get(SESSION_TENANT_KEY)
    membership = next((m for m in memberships if m.tenant_id == wanted), None)
    if membership is None:
        membership = memberships[0] if memberships else None
        if membership is not None:
            request.session[SESSION_TENANT_KEY] = membership.tenant_id
        else:
            request.session.pop(SESSION_TENANT_KEY, None)
    return membership


def switch_tenant(request: HttpRequest, tenant_id: object) -> Membership | None:
    membership = membership_get(request.user, tenant_id)
    if membership is not None:
        request.session[SESSION_TENANT_KEY] = membership.tenant_id
    return membership


def member_required(
    view: Callable[Concatenate[TenantRequest, P], HttpResponseBase],
) -> Callable[Concatenate[HttpRequest, P], HttpResponseBase]:
    """Log in first; then act for the current tenant, or explain that there is none."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponseBase:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        membership = current_membership(request)
        if membership is None:
            return render(request, "dashboard/no_tenant.html", status=403)
        request.membership = membership  # type: ignore[attr-defined]
        request.tenant = membership.tenant  # type: ignore[attr-defined]
        return view(request, *args, **kwargs)  # type: ignore[arg-type]

    return wrapper


def managers_only(
    view: Callable[Concatenate[TenantRequest, P], HttpResponseBase],
) -> Callable[Concatenate[TenantRequest, P], HttpResponseBase]:
    """Owners and admins only (key management); members get 403."""

    @functools.wraps(view)
    def wrapper(request: TenantRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponseBase:
        if not request.membership.can_manage_keys:
            raise PermissionDenied("Only owners and admins of this tenant can manage API keys.")
        return view(request, *args, **kwargs)

    return wrapper


def dashboard_context(request: TenantRequest, **extra: Any) -> dict[str, Any]:
    """What base.html needs on every page: the tenant, the role, the switcher's choices."""
    return {
        "tenant": request.tenant,
        "membership": request.membership,
        "memberships": getattr(request, "memberships", None) or list(memberships_for_user(request.user)),
        **extra,
    }


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_parts(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin such as ``https://example.com:8443``; None if it is not one."""
    try:
        parsed = urlparse(url)
        port = parsed.port
    except ValueError:
        return None
    scheme = (parsed.scheme or "").lower()
    if scheme not in _DEFAULT_PORTS or not parsed.hostname:
        return None
    return scheme, parsed.hostname.lower(), port or _DEFAULT_PORTS[scheme]


def _own_origin(scope: dict[str, Any], headers: dict[bytes, bytes]) -> tuple[str, str, int] | None:
    """The origin of the dashboard page that may open this socket: the socket's own host and port,
    https when it came over TLS (``wss``, or a TLS proxy named by ``SECURE_PROXY_SSL_HEADER``)."""
    secure = scope.get("scheme") == "wss"
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy is not None:
        header = proxy[0].removeprefix("HTTP_").lower().replace("_", "-").encode("latin-1")
        secure = secure or headers.get(header, b"").decode("latin-1").split(",")[0].strip() == proxy[1]
    host = headers.get(b"host", b"").decode("latin-1")
    if not host:
        return None
    return _origin_parts(f"{'https' if secure else 'http'}://{host}")


def _trusted(origin: tuple[str, str, int], entry: str) -> bool:
    """Whether ``origin`` matches one ``CSRF_TRUSTED_ORIGINS`` entry (``https://*.example.com`` allowed)."""
    wildcard = "://*." in entry
    parts = _origin_parts(entry.replace("://*.", "://", 1))
    if parts is None:
        return False
    scheme, host, port = parts
    if (origin[0], origin[2]) != (scheme, port):
        return False
    return origin[1] == host or (wildcard and origin[1].endswith("." + host))


def _same_origin(scope: dict[str, Any]) -> bool:
    # Cookies ride along on cross-site WebSockets too: a session only counts
    # when the page that opened the socket is one of ours. Scheme, host and
    # port all count: another port on the same host is another site.
    headers = dict(scope.get("headers") or [])
    origin = _origin_parts(headers.get(b"origin", b"").decode("latin-1"))
    if origin is None:
        return False
    if origin == _own_origin(scope, headers):
        return True
    return any(_trusted(origin, entry) for entry in settings.CSRF_TRUSTED_ORIGINS)


def websocket_session_tenant(scope: dict[str, Any]) -> Tenant | None:
    """The current tenant of a WebSocket opened by one of our dashboard pages.

    The dashboard's rule: a logged-in user, a same-origin page, and the
    session's ``current_tenant_id`` a tenant the user is (still) a member of.
    Blocking (ORM): call it through ``database_sync_to_async``.
    """
    user = scope.get("user")
    session = scope.get("session")
    if user is None or not user.is_authenticated or session is None or not _same_origin(scope):
        return None
    tenant_id = session.get(SESSION_TENANT_KEY)
    membership = membership_get(user, tenant_id) if tenant_id is not None else None
    return membership.tenant if membership is not None else None
