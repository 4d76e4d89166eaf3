"""Failed-login throttling (django-axes) wiring: which address a login comes from.

Axes counts failed logins per username and per client address and refuses
further attempts with 429 for ``LOGIN_LOCKOUT_MINUTES`` once either reaches
``LOGIN_FAILURE_LIMIT`` (settings, docs/limits.md). Behind proxies the
socket's address is the proxy's, so with ``LOGIN_TRUSTED_PROXIES`` = N the
address is the N-th entry from the right of ``X-Forwarded-For`` (the one the
outermost trusted proxy saw); entries left of it are the client's to forge.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str | None:
    """The client's address for throttling, trusting only ``LOGIN_TRUSTED_PROXIES`` proxies."""
    trusted = settings.LOGIN_TRUSTED_PROXIES
    if trusted:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
        if len(hops) >= trusted:
            return hops[-trusted]
    return request.META.get("REMOTE_ADDR")
