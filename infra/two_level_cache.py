"""A two-level cache: an in-process LRU bounded by size (L1, ``infra.sized_lru``) in front of a
django-redis alias shared by every process (L2, only with ``REDIS_URL``).

A hit found in L2 is copied into L1. One entry may not take more than a
quarter of L1. When Redis is unreachable L2 is skipped (``RedisCircuit``:
one log line per outage, tried again after ``TTS_REDIS_RETRY_S``). Nothing
here raises into the caller: a cache never fails a request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.core.cache import caches

from .redis_circuit import RedisCircuit
from .sized_lru import SizedLRU

logger = logging.getLogger(__name__)

V = TypeVar("V")


class TwoLevelCache(Generic[V]):
    """Entries of type ``V`` by string key, in this process and in Redis.

    ``size`` measures an entry for the L1 bound, ``l1_capacity`` and ``max_entry``
    are read on each use (settings can change in tests), ``to_wire``/``from_wire``
    turn an entry into plain types for Redis and back (``from_wire`` may raise
    ``KeyError``/``TypeError``/``ValueError`` for an entry of an older layout:
    that is a miss).
    """

    def __init__(
        self,
        name: str,
        *,
        size: Callable[[V], int],
        l1_capacity: Callable[[], int],
        max_entry: Callable[[], int],
        to_wire: Callable[[V], Any],
        from_wire: Callable[[Any], V],
        alias: Callable[[], str] = lambda: str(settings.TTS_AUDIO_CACHE_ALIAS),
        ttl: Callable[[], int] = lambda: int(settings.TTS_AUDIO_CACHE_TTL_S),
    ) -> None:
        self.name = name
        self._size = size
        self._l1_capacity = l1_capacity
        self._max_entry = max_entry
        self._to_wire = to_wire
        self._from_wire = from_wire
        self._alias = alias
        self._ttl = ttl
        self._l1: SizedLRU[str, V] = SizedLRU(size=size, capacity=l1_capacity)
        self._circuit = RedisCircuit(name, "serving from this process's memory only")

    # --- L1 ---------------------------------------------------------------

    def _l1_get(self, key: str) -> V | None:
        return self._l1.get(key)

    def _l1_put(self, key: str, entry: V, size: int) -> None:
        self._l1.put(key, entry, size)

    @property
    def _l1_size(self) -> int:
        return self._l1.total

    def clear_local(self) -> None:
        self._l1.clear()

    # --- L2 ---------------------------------------------------------------

    def _l2_get(self, key: str) -> V | None:
        if not self._circuit.available():
            return None
        try:
            data = caches[self._alias()].get(key)
            self._circuit.succeeded()
        except Exception as exc:
            self._circuit.failed(exc)
            return None
        if data is None:
            return None
        try:
            return self._from_wire(data)
        except (KeyError, TypeError, ValueError):
            return None  # an entry of an older layout: a miss

    def _l2_put(self, key: str, entry: V) -> None:
        if not self._circuit.available():
            return
        try:
            caches[self._alias()].set(key, self._to_wire(entry), timeout=self._ttl())
            self._circuit.succeeded()
        except Exception as exc:
            self._circuit.failed(exc)

    # --- both -------------------------------------------------------------

    def get(self, key: str | None) -> V | None:
        """The entry for ``key`` from L1, else L2 (copied into L1); None on a miss."""
        if not key:
            return None
        entry = self._l1_get(key)
        if entry is None:
            entry = self._l2_get(key)
            if entry is not None:
                self._l1_put(key, entry, self._size(entry))
        return entry

    def put(self, key: str | None, entry: V) -> None:
        """Store in both levels; empty entries and those over ``max_entry`` are skipped."""
        if not key:
            return
        size = self._size(entry)
        if not size or size > self._max_entry():
            return
        try:
            self._l1_put(key, entry, size)
        except Exception:
            logger.exception("could not store in the in-process %s", self.name)
        self._l2_put(key, entry)
