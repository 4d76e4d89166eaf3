"""An in-process LRU map bounded by the total size of its entries (bytes, or any measure).

The L1 of ``infra.two_level_cache`` and the compiled pronunciation rules
(``tts.pronunciation.apply``) keep their entries here. One entry may
take at most a quarter of the capacity, so that one large entry never pushes
out a large part of the cache; a larger one is simply not kept. The capacity
is read on every put (settings can change in tests); ``0`` keeps nothing.
Thread-safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SizedLRU(Generic[K, V]):
    def __init__(self, *, size: Callable[[V], int], capacity: Callable[[], int]) -> None:
        self._size = size
        self._capacity = capacity
        self._lock = threading.Lock()
        self._entries: OrderedDict[K, V] = OrderedDict()
        self.total = 0

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: K, entry: V, size: int | None = None) -> bool:
        """Keep ``entry`` (``size`` if already measured), evicting the least recently used past the
        capacity; False when it is too large to keep."""
        size = self._size(entry) if size is None else size
        capacity = self._capacity()
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.total -= self._size(old)
            if size > capacity // 4:
                return False
            self._entries[key] = entry
            self.total += size
            while self.total > capacity and self._entries:
                _, evicted = self._entries.popitem(last=False)
                self.total -= self._size(evicted)
            return True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.total = 0

    def __len__(self) -> int:
        return len(self._entries)
