"""Rows that every API request reads (its API key with tenant and plan, the voice and
the active model version), kept in this process for ``TTS_LOOKUP_CACHE_S`` seconds.

Each of those reads is one small query, but the ORM spends about a
millisecond building it: together they were a third of a cache hit's cost
(``bench/bench_cache.py``). A hit now reads none of them.

How fresh it stays:

* in the process that changes a row, at once: saving or deleting an API key,
  tenant, plan, voice or model version clears the caches (signals, in
  ``accounts.apps`` and ``tts.apps``), and the services that change rows with
  ``UPDATE`` (key revocation, model activation) clear them too;
* in every other process, within ``TTS_LOOKUP_CACHE_S`` (2 s by default, the
  same order as the model poller's ``TTS_MODEL_POLL_SECONDS``; the poller also
  clears them as soon as it sees another active version). ``0`` turns caching
  off: every request reads the database.

Only rows that exist are kept: a key or voice created a moment ago is found
at once everywhere. Quota and usage are never cached (they live in the
database and change with every request).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from django.conf import settings
from django.db.models import Model
from django.db.models.signals import post_delete, post_save

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: Entries per cache; past it the cache starts over (keys and voices are few per process).
_MAX_ENTRIES = 10_000


class LookupCache(Generic[K, V]):
    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._entries: dict[K, tuple[float, V]] = {}
        # Bumped by clear(): a load that started before a clear must not store what it read.
        self._generation = 0

    def get(self, key: K, load: Callable[[], V | None]) -> V | None:
        """The cached value for ``key``, else ``load()`` (kept unless it is None)."""
        ttl = settings.TTS_LOOKUP_CACHE_S
        if ttl <= 0:
            return load()
        now = time.monotonic()
        entry = self._entries.get(key)
        if entry is not None and entry[0] > now:
            return entry[1]
        generation = self._generation
        value = load()
        if value is not None:
            with self._lock:
                if generation == self._generation:
                    if len(self._entries) >= _MAX_ENTRIES:
                        self._entries.clear()
                    self._entries[key] = (now + ttl, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._generation += 1
            self._entries.clear()


_caches: list[LookupCache[object, object]] = []
#: Other per-process caches of the same rows (the Wyoming describe answers), cleared with these.
_clear_callbacks: list[Callable[[], None]] = []


def lookup_cache(name: str) -> LookupCache[K, V]:
    cache: LookupCache[K, V] = LookupCache(name)
    _caches.append(cache)  # type: ignore[arg-type]
    return cache


def on_lookup_caches_cleared(callback: Callable[[], None]) -> None:
    """Call ``callback`` (from any thread) whenever the lookup caches are cleared."""
    _clear_callbacks.append(callback)


def clear_lookup_caches(**_: object) -> None:
    """Forget every cached row in this process (a signal receiver too: takes any arguments)."""
    for cache in _caches:
        cache.clear()
    for callback in _clear_callbacks:
        callback()


def clear_lookup_caches_on_change(*models: type[Model]) -> None:
    """Clear the caches whenever a row of one of ``models`` is saved or deleted in this process."""
    for model in models:
        label = model._meta.label
        post_save.connect(clear_lookup_caches, sender=model, dispatch_uid=f"lookup-cache-save-{label}")
        post_delete.connect(clear_lookup_caches, sender=model, dispatch_uid=f"lookup-cache-delete-{label}")
