"""Who may read ``/metrics`` and ``/readyz``: a bearer token, an address list, or anyone.

``/metrics`` shows traffic volumes and ``/readyz`` which model versions are
loaded; neither belongs on a public ingress. ``METRICS_TOKEN`` (a bearer
token) and ``OPS_ALLOWED_NETWORKS`` (addresses or CIDR networks, matched
against the client's address, ``infra.client_address``: the socket's peer
unless ``TRUSTED_PROXIES`` says which forwarded hops to believe; Prometheus
and kubelets call pods directly) each
open them; with both unset ``/metrics`` answers loopback and private addresses only
(``PRIVATE_NETWORKS``: a public address gets 403) and ``/readyz`` anyone. ``/healthz`` stays open:
it says nothing but "this process answers". The token guards ``/readyz`` only
when ``READYZ_NEEDS_TOKEN`` is on, since a kubelet probe must then send it
(``httpHeaders`` in the probe). This module imports no app.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse

from .client_address import client_address

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Who reads ``/metrics`` when neither a token nor networks are set: this machine and private networks
#: (a Prometheus in the cluster or on the compose network), never a public address.
PRIVATE_NETWORKS = ("127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")


@functools.cache
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    try:
        return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())
    except ValueError as exc:
        raise ImproperlyConfigured(f"OPS_ALLOWED_NETWORKS: {exc}") from exc


def _address_allowed(request: HttpRequest, networks: tuple[Network, ...]) -> bool:
    try:
        address = ipaddress.ip_address(client_address(request) or "")
    except ValueError:
        return False
    return any(address in network for network in networks)


def _token_given(request: HttpRequest, token: str) -> bool:
    given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    return hmac.compare_digest(given.encode(), token.encode())


def ops_access_refusal(request: HttpRequest, *, route: str) -> HttpResponse | None:
    """None when ``request`` may read ``route`` (``metrics`` or ``readyz``); else the 401/403 to send."""
    token = settings.METRICS_TOKEN if route == "metrics" or settings.READYZ_NEEDS_TOKEN else ""
    networks = _networks(tuple(settings.OPS_ALLOWED_NETWORKS))
    if not token and not networks:
        if route != "metrics":
            return None
        # /metrics is never open to the world: with nothing set, loopback and private networks only.
        networks = _networks(PRIVATE_NETWORKS)
    if networks and _address_allowed(request, networks):
        return None
    if token and _token_given(request, token):
        return None
    if token:
        response = HttpResponse(f"/{route} wants a bearer token\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="ops"'
        return response
    return HttpResponse(f"/{route} is not served to this address\n", status=403, content_type="text/plain")
