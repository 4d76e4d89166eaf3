"""The client's address: the one function the login throttle, ops access and logs ask.

Behind proxies the socket's peer is the last proxy and the client is somewhere
in ``X-Forwarded-For``, which every hop appends to and the client may start
with anything it likes (``X-Forwarded-For: 10.0.0.5`` from outside). So only
the hops that trusted proxies appended count, and the client is the rightmost
address that no trusted proxy is known to have: the rightmost untrusted hop.

``TRUSTED_PROXIES`` (docs/operations.md, beside ``OPS_ALLOWED_NETWORKS``) says
which hops are trusted, in one of two forms:

* empty (the default): none. The socket's peer is the client and
  ``X-Forwarded-For`` is ignored. Right when clients connect to daphne directly.
* a count ``N`` (1-10): the app is reachable only through ``N`` proxies (a CDN
  and an ingress: 2). The client is the ``N``-th entry from the right of
  ``X-Forwarded-For``; with fewer entries, the leftmost (a request that came
  through fewer proxies than that did not start behind them).
* networks (``10.0.0.0/8, 192.168.1.7``): the proxies' addresses. When the peer
  is in them, ``X-Forwarded-For`` is read from the right, skipping entries in
  them; the first one outside is the client. A peer outside them is the client
  whatever the header says, so this form holds even where the app can also be
  reached directly.

daphne's ``--proxy-headers`` trusts the *leftmost* entry and rewrites the peer
with it, so the deploy files leave it off; ``scope["client"]`` and
``REMOTE_ADDR`` stay the socket's peer and this module derives the client from
them. The result is the address in canonical form, or ``None`` when a trusted
hop wrote something that is not an address (callers treat it as unknown: ops
access refuses it). This module imports no app.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from django.http import HttpRequest

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: The trusted-proxy setting, parsed: a hop count, or the proxies' networks.
TrustedProxies = int | tuple[Network, ...]

MAX_HOPS = 10


def parse_trusted_proxies(value: str, *, name: str = "TRUSTED_PROXIES") -> TrustedProxies:
    """``""`` -> 0, ``"2"`` -> 2, ``"10.0.0.0/8, 192.168.1.7"`` -> networks; ``ImproperlyConfigured`` otherwise."""
    value = value.strip()
    if not value:
        return 0
    if value.isdigit():
        hops = int(value)
        if hops > MAX_HOPS:
            raise ImproperlyConfigured(f"{name}: at most {MAX_HOPS} proxy hops, got {hops}")
        return hops
    try:
        return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in value.split(",") if entry.strip())
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: a hop count or addresses/CIDR networks; {exc}") from exc


def parse_address(value: str) -> Address | None:
    """An address from a socket peer or a forwarded hop (``1.2.3.4``, ``1.2.3.4:80``, ``[::1]:80``)."""
    text = value.strip().strip('"')
    if text.startswith("["):
        text = text[1:].split("]", 1)[0]
    elif text.count(":") == 1:  # IPv4 with a port
        text = text.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def forwarded_hops(values: Iterable[str]) -> list[str]:
    """The entries of every ``X-Forwarded-For`` value, in order (several headers read as one list)."""
    return [hop.strip() for value in values for hop in value.split(",") if hop.strip()]


def derive_client_address(peer: str | None, hops: list[str], trusted: TrustedProxies) -> str | None:
    """The rightmost untrusted hop: the client's address, by the rules of the module docstring."""
    peer_address = parse_address(peer or "")
    if not trusted or not hops:
        return str(peer_address) if peer_address is not None else None
    if isinstance(trusted, int):
        chosen = hops[-trusted] if len(hops) >= trusted else hops[0]
        address = parse_address(chosen)
        return str(address) if address is not None else None
    if peer_address is None or not _in(peer_address, trusted):
        return str(peer_address) if peer_address is not None else None
    for hop in reversed(hops):
        address = parse_address(hop)
        if address is None:
            return None  # a trusted proxy passed on something that is no address: unknown
        if not _in(address, trusted):
            return str(address)
    return str(parse_address(hops[0]))  # every hop is a proxy of ours: the first is as far as we know


def _in(address: Address, networks: tuple[Network, ...]) -> bool:
    return any(address.version == network.version and address in network for network in networks)


@functools.cache
def _parsed(value: str) -> TrustedProxies:
    return parse_trusted_proxies(value)


def trusted_proxies() -> TrustedProxies:
    """``settings.TRUSTED_PROXIES``, parsed once per value."""
    return _parsed(str(getattr(settings, "TRUSTED_PROXIES", "") or ""))


def client_address(request: HttpRequest) -> str | None:
    """The client's address of a Django request (``REMOTE_ADDR`` and ``X-Forwarded-For``)."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    hops = forwarded_hops([forwarded]) if forwarded else []
    return derive_client_address(request.META.get("REMOTE_ADDR"), hops, trusted_proxies())


def client_address_from_scope(scope: Any) -> str | None:
    """The client's address of an ASGI scope (HTTP or WebSocket)."""
    client = scope.get("client") or (None, None)
    values = [v.decode("latin-1") for k, v in scope.get("headers") or () if k.lower() == b"x-forwarded-for"]
    return derive_client_address(client[0], forwarded_hops(values), trusted_proxies())


def client_address_from_headers(peer: str | None, forwarded_for: Iterable[bytes | str]) -> str | None:
    """The same from a server's own view of a connection: its peer and its ``X-Forwarded-For`` values."""
    values = [v.decode("latin-1") if isinstance(v, bytes) else v for v in forwarded_for]
    return derive_client_address(peer, forwarded_hops(values), trusted_proxies())
