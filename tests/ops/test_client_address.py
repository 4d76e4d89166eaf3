"""The client's address (infra/client_address.py): the rightmost untrusted hop, by a hop count or by
the proxies' networks; a forged X-Forwarded-For never opens OPS_ALLOWED_NETWORKS; a bad
TRUSTED_PROXIES stops the start with its name."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, override_settings

from infra.client_address import derive_client_address, parse_trusted_proxies

NETS = parse_trusted_proxies("10.0.0.0/8, 192.168.1.7")


@pytest.mark.parametrize(
    ("peer", "forwarded", "trusted", "client"),
    [
        # Nothing trusted: the header is ignored, whatever it says.
        ("203.0.113.9", "10.0.0.5", 0, "203.0.113.9"),
        # One proxy: the entry it appended; the client's own entries on the left do not count.
        ("10.0.0.2", "10.0.0.5, 203.0.113.9", 1, "203.0.113.9"),
        ("10.0.0.2", "6.6.6.6, 198.51.100.1, 203.0.113.9", 2, "198.51.100.1"),
        # Fewer hops than proxies: the leftmost (it came past fewer of them), never the peer.
        ("10.0.0.2", "203.0.113.9", 2, "203.0.113.9"),
        ("10.0.0.2", "", 1, "10.0.0.2"),
        # Networks: a peer outside them is the client, whatever it forwards.
        ("203.0.113.9", "10.0.0.5", NETS, "203.0.113.9"),
        # A trusted peer: from the right, the first hop outside them.
        ("10.0.0.2", "6.6.6.6, 203.0.113.9, 10.1.1.1, 192.168.1.7", NETS, "203.0.113.9"),
        ("10.0.0.2", "10.0.0.5", NETS, "10.0.0.5"),  # every hop ours: the first we know
        # Ports and IPv4-mapped IPv6 are read as the address they carry.
        ("::ffff:10.0.0.2", "203.0.113.9:5123", NETS, "203.0.113.9"),
        ("10.0.0.2", "[2001:db8::1]:443", NETS, "2001:db8::1"),
        # A trusted hop that wrote no address: unknown.
        ("10.0.0.2", "not-an-address", NETS, None),
    ],
)
def test_it_takes_the_rightmost_untrusted_hop(peer: str, forwarded: str, trusted: object, client: str | None) -> None:
    hops = [h.strip() for h in forwarded.split(",") if h.strip()]
    assert derive_client_address(peer, hops, trusted) == client  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["11", "10.0.0.0/33", "proxy.example.com"])
def test_a_bad_setting_names_itself(value: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="TRUSTED_PROXIES"):
        parse_trusted_proxies(value)


@pytest.mark.django_db
@override_settings(OPS_ALLOWED_NETWORKS=["10.0.0.0/8"], METRICS_TOKEN="scrape-secret")
def test_a_forged_forwarded_for_does_not_open_ops_routes() -> None:
    outside = Client(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="10.0.0.5")
    assert outside.get("/metrics").status_code == 401
    with override_settings(TRUSTED_PROXIES="1"):
        # Behind one proxy that appended the outsider's address, the forged entry on its left counts for nothing.
        proxied = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="10.0.0.5, 203.0.113.9")
        assert proxied.get("/metrics").status_code == 401
        assert Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="10.3.0.7").get("/metrics").status_code == 200
    with override_settings(TRUSTED_PROXIES="10.0.0.2"):
        forged = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="10.0.0.5, 203.0.113.9")
        assert forged.get("/metrics").status_code == 401
        # Prometheus calling the pod directly is its own peer.
        assert Client(REMOTE_ADDR="10.4.0.1").get("/metrics").status_code == 200
