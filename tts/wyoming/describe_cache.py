"""The answer to ``describe``: a tenant's voices as an encoded ``info`` event, built once and sent many times.

``catalog.tenant_info`` reads every voice the tenant may speak with and the
versions that serve them: about 25 ms and a 79 KB answer with Kokoro's 54
voices, on the one database thread every listener of the process shares.
Built for each ``describe``, eight connections at 95 describes a second
moved a cached synthesize from 12 ms to 0.4-0.5 s (48: 2-3 s). Now:

* a tenant's answer is built and encoded once and kept for
  ``TTS_WYOMING_DESCRIBE_CACHE_S`` (2 s; ``0``: built for every describe):
  a voice added, renamed or removed, or a model version activated, in another
  process is described within it;
* it is dropped at once when this process sees voices or model versions
  change (the lookup caches' signals and the model poller clear it with them,
  ``infra/lookup_cache.py``);
* one describe per tenant builds it; the others wait for that one (no
  stampede when the entry expires under a flood).

The listener's key is checked for a describe at most once per
``TTS_LOOKUP_CACHE_S`` (the lookup cache's own freshness; the handler keeps
it per listener): a revoked key gets its error within that time, and a flood
of describes costs no trip to the database thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from channels.db import database_sync_to_async
from django.conf import settings
from wyoming.info import Info

from accounts.models import Tenant
from infra.lookup_cache import on_lookup_caches_cleared

from .framing import encode_event
from .metrics import DESCRIBE_ANSWERS

TenantKey = tuple[int, float]


class DescribeCache:
    """Encoded ``info`` answers per tenant. Used on the event loop; ``clear`` from any thread."""

    def __init__(self) -> None:
        self._answers: dict[TenantKey, tuple[float, bytes]] = {}
        self._building: dict[TenantKey, asyncio.Lock] = {}
        self._generation = 0

    def clear(self) -> None:
        self._generation += 1
        self._answers = {}

    def _fresh(self, key: TenantKey) -> bytes | None:
        entry = self._answers.get(key)
        if entry is None or time.monotonic() - entry[0] >= settings.TTS_WYOMING_DESCRIBE_CACHE_S:
            return None
        return entry[1]

    async def answer(self, tenant: Tenant, build: Callable[[Tenant], Info]) -> bytes:
        """The encoded ``info`` event for ``tenant``: cached, or ``build`` run once (in the database thread)."""
        # The creation time beside the pk: a recreated database reuses pks.
        key = (tenant.pk, tenant.created_at.timestamp())
        cached = self._fresh(key)
        if cached is not None:
            DESCRIBE_ANSWERS.labels("cached").inc()
            return cached
        lock = self._building.setdefault(key, asyncio.Lock())
        async with lock:
            cached = self._fresh(key)
            if cached is not None:
                DESCRIBE_ANSWERS.labels("cached").inc()
                return cached
            generation = self._generation
            data = encode_event((await database_sync_to_async(build)(tenant)).event())
            DESCRIBE_ANSWERS.labels("built").inc()
            if generation == self._generation and settings.TTS_WYOMING_DESCRIBE_CACHE_S > 0:
                now = time.monotonic()
                ttl = settings.TTS_WYOMING_DESCRIBE_CACHE_S
                answers = {k: v for k, v in self._answers.items() if now - v[0] < ttl}
                answers[key] = (now, data)
                self._answers = answers
        if not lock.locked():
            self._building.pop(key, None)
        return data


describe_cache = DescribeCache()
on_lookup_caches_cleared(describe_cache.clear)
