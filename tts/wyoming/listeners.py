"""Which ports the Wyoming server listens on, and whose key each one speaks with.

The protocol carries no credentials, so a listener *is* the credential: one
port bound to one API key (its tenant, its scopes), open only to the client
networks it allows. One listener from the settings (``TTS_WYOMING_PORT`` with
``TTS_WYOMING_API_KEY`` or ``TTS_WYOMING_API_KEY_FILE``), or a table of them
(``TTS_WYOMING_LISTENERS_FILE``, JSON)::

    {
      "10200": "tts_0123456789ab_...",
      "10201": {"api_key_file": "/run/secrets/kitchen", "allowed_networks": ["192.168.1.0/24"],
                "voice": "jf_alpha", "sample_rate": 16000}
    }
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from .address_limits import AddressLimits, client_address

if TYPE_CHECKING:
    from accounts.models import ApiKey

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class ListenerConfigError(ValueError):
    """The listener settings or table are wrong; the message names what."""


@dataclass
class Listener:
    host: str
    port: int
    api_key: str = field(repr=False)
    allowed_networks: tuple[Network, ...]
    #: The voice when a client names none ("" = ``TTS_DEFAULT_VOICE_ID``).
    voice: str = ""
    #: 0: each voice's own rate.
    sample_rate: int = 0
    #: Connections open now (the server counts them against ``TTS_WYOMING_MAX_CONNECTIONS``).
    connections: int = 0
    #: Connections and events per client address (``TTS_WYOMING_MAX_*_PER_ADDRESS``).
    limits: AddressLimits = field(default_factory=AddressLimits, repr=False)
    #: When the key was last checked, and what it was then (describe reuses it within
    #: ``TTS_LOOKUP_CACHE_S``).
    checked_key: tuple[float, ApiKey] | None = field(default=None, repr=False)

    def allows(self, address: str) -> bool:
        """Whether a client at ``address`` (as the socket reports it) may be served."""
        try:
            ip = ipaddress.ip_address(client_address(address))
        except ValueError:
            return False
        return any(ip in network for network in self.allowed_networks)

    @property
    def key_prefix(self) -> str:
        """What may be shown of the key: its public prefix (``tts_0123456789ab``)."""
        return "_".join(self.api_key.split("_")[:2])


def parse_networks(entries: list[str] | tuple[str, ...], *, where: str) -> tuple[Network, ...]:
    try:
        return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())
    except ValueError as exc:
        raise ListenerConfigError(f"{where}: {exc}") from None


def _read_key_file(path: str, *, where: str) -> str:
    try:
        key = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ListenerConfigError(f"{where}: cannot read the key file {path!r}: {exc}") from None
    if not key:
        raise ListenerConfigError(f"{where}: the key file {path!r} is empty.")
    return key


def _port(value: object, *, where: str) -> int:
    try:
        port = int(str(value))
    except ValueError:
        raise ListenerConfigError(f"{where}: {value!r} is not a port number.") from None
    if not 1 <= port <= 65535:
        raise ListenerConfigError(f"{where}: port {port} is out of range (1-65535).")
    return port


def _from_entry(host: str, port_value: str, entry: Any, default_networks: tuple[Network, ...]) -> Listener:
    where = f"listener {port_value}"
    port = _port(port_value, where=where)
    if isinstance(entry, str):
        entry = {"api_key": entry}
    if not isinstance(entry, dict):
        raise ListenerConfigError(f"{where}: expected a key or an object, got {type(entry).__name__}.")
    unknown = set(entry) - {"api_key", "api_key_file", "allowed_networks", "voice", "sample_rate"}
    if unknown:
        raise ListenerConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}.")
    if "api_key_file" in entry:
        key = _read_key_file(str(entry["api_key_file"]), where=f"{where}.api_key_file")
    else:
        key = str(entry.get("api_key") or "").strip()
    if not key:
        raise ListenerConfigError(f"{where}: needs api_key or api_key_file.")
    networks = default_networks
    if "allowed_networks" in entry:
        raw = entry["allowed_networks"]
        if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
            raise ListenerConfigError(f"{where}.allowed_networks: expected a list of addresses or CIDR networks.")
        networks = parse_networks(raw, where=f"{where}.allowed_networks")
    rate = entry.get("sample_rate", settings.TTS_WYOMING_SAMPLE_RATE)
    if not isinstance(rate, int) or isinstance(rate, bool) or not 0 <= rate <= 192_000:
        raise ListenerConfigError(f"{where}.sample_rate: expected 0 (the voice's rate) or a rate in Hz.")
    voice = entry.get("voice", settings.TTS_WYOMING_VOICE)
    if not isinstance(voice, str):
        raise ListenerConfigError(f"{where}.voice: expected a voice id.")
    return Listener(host, port, key, networks, voice=voice, sample_rate=rate)


def listeners_from_table(path: str, *, host: str, default_networks: tuple[Network, ...]) -> list[Listener]:
    """The listeners of a JSON table file: ``{"port": key | {...}}``."""
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ListenerConfigError(f"TTS_WYOMING_LISTENERS_FILE: cannot read {path!r}: {exc}") from None
    except ValueError as exc:
        raise ListenerConfigError(f"TTS_WYOMING_LISTENERS_FILE: {path!r} is not JSON: {exc}") from None
    if not isinstance(table, dict) or not table:
        raise ListenerConfigError("TTS_WYOMING_LISTENERS_FILE: expected an object of port -> key.")
    return [_from_entry(host, str(port), entry, default_networks) for port, entry in table.items()]


def listeners_from_settings(
    *,
    host: str | None = None,
    port: int | None = None,
    api_key: str | None = None,
    api_key_file: str | None = None,
    listeners_file: str | None = None,
) -> list[Listener]:
    """The listeners to open: a table when one is given, else one port with one key.

    Arguments (the management command's options) override the settings.
    """
    host = host or settings.TTS_WYOMING_HOST
    networks = parse_networks(settings.TTS_WYOMING_ALLOWED_NETWORKS, where="TTS_WYOMING_ALLOWED_NETWORKS")
    table = listeners_file if listeners_file is not None else settings.TTS_WYOMING_LISTENERS_FILE
    if table and not (api_key or api_key_file):
        return listeners_from_table(table, host=host, default_networks=networks)
    if api_key_file:
        key = _read_key_file(api_key_file, where="--api-key-file")
    else:
        key = (api_key or settings.TTS_WYOMING_API_KEY or "").strip()
    if not key:
        raise ListenerConfigError(
            "No API key for the Wyoming listener: set TTS_WYOMING_API_KEY (or TTS_WYOMING_API_KEY_FILE), "
            "or a table of port -> key in TTS_WYOMING_LISTENERS_FILE."
        )
    entry = {"api_key": key}
    return [_from_entry(host, str(port or settings.TTS_WYOMING_PORT), entry, networks)]
