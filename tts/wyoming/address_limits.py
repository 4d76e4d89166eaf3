"""What one client address may hold of a Wyoming listener: connections, and events a second.

The protocol has no credentials, so a listener's clients are told apart only
by their address. Without these bounds one address could hold all
``TTS_WYOMING_MAX_CONNECTIONS`` of a listener (a ``ping`` every 59 s keeps a
connection) and spread a flood over them, each connection within its own
``TTS_WYOMING_MAX_EVENTS_PER_S``. Per listener and per address:

* at most ``TTS_WYOMING_MAX_CONNECTIONS_PER_ADDRESS`` open connections (past
  it: ``too_many_connections``, closed);
* at most ``TTS_WYOMING_MAX_EVENTS_PER_S_PER_ADDRESS`` events a second over
  all of them, in bursts of twice as many (past it: ``too_many_events``, the
  connection that sent it closed).

An address is its IP (an IPv4-mapped IPv6 address is its IPv4 one). Its
bucket outlives its connections until it is full again, so reconnecting
does not refill it. Called on the event loop only.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field

from django.conf import settings


class TokenBucket:
    """``rate`` events a second, bursts of twice as many (a flood costs the loop every tenant shares)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._tokens = 2.0 * rate
        self._at = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(2.0 * self.rate, self._tokens + (now - self._at) * self.rate)
        self._at = now

    def take(self) -> bool:
        self._refill()
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    @property
    def full(self) -> bool:
        self._refill()
        return self._tokens >= 2.0 * self.rate


def client_address(address: str) -> str:
    """The address as the limits count it: scope id dropped, IPv4-mapped IPv6 as IPv4."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


@dataclass
class _Address:
    connections: int = 0
    events: TokenBucket = field(default_factory=lambda: TokenBucket(settings.TTS_WYOMING_MAX_EVENTS_PER_S_PER_ADDRESS))


#: Addresses with no connection whose buckets are kept (until full again) before a sweep drops them.
_IDLE_ADDRESSES_SWEEP = 256


class AddressLimits:
    """One listener's count of connections and events per client address."""

    def __init__(self) -> None:
        self._addresses: dict[str, _Address] = {}
        self._idle = 0

    def connect(self, address: str) -> bool:
        """Count a new connection from ``address``; False (nothing counted) past the bound."""
        entry = self._addresses.get(address)
        if entry is None:
            entry = self._addresses[address] = _Address()
        elif not entry.connections:
            self._idle -= 1
        if entry.connections >= settings.TTS_WYOMING_MAX_CONNECTIONS_PER_ADDRESS:
            return False
        entry.connections += 1
        return True

    def disconnect(self, address: str) -> None:
        entry = self._addresses.get(address)
        if entry is None or entry.connections <= 0:
            return
        entry.connections -= 1
        if entry.connections:
            return
        if entry.events.full:
            del self._addresses[address]
            return
        self._idle += 1
        if self._idle > _IDLE_ADDRESSES_SWEEP:
            self._sweep()

    def _sweep(self) -> None:
        for address, entry in list(self._addresses.items()):
            if not entry.connections and entry.events.full:
                del self._addresses[address]
        self._idle = sum(1 for entry in self._addresses.values() if not entry.connections)

    def event_allowed(self, address: str) -> bool:
        """One event from ``address`` within its rate (an address never counted: always)."""
        entry = self._addresses.get(address)
        return entry is None or entry.events.take()

    def connections(self, address: str) -> int:
        entry = self._addresses.get(address)
        return entry.connections if entry is not None else 0
