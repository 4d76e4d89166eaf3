"""The alignment that goes with a cached audio entry, so a cache hit still has timestamps.

Kept beside the audio cache, under the audio entry's key plus a suffix: an
in-process LRU, and the same django-redis alias when ``REDIS_URL`` is set.
An entry can be evicted apart from its audio; then a hit has no alignment.
Never raises.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.core.cache import caches

logger = logging.getLogger(__name__)

#: In-process bound, in characters over all entries (an entry holds about 40 bytes a character).
_L1_CHARACTERS = 500_000


def _size(alignment: dict[str, Any]) -> int:
    track = alignment.get("normalized_alignment") or alignment.get("alignment") or {}
    return 2 * len(track.get("characters") or [])


class AlignmentCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._l1: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._l1_size = 0

    @staticmethod
    def _key(audio_key: str) -> str:
        return f"{audio_key}:alignment"

    def get(self, audio_key: str | None) -> dict[str, Any] | None:
        if not audio_key:
            return None
        key = self._key(audio_key)
        with self._lock:
            entry = self._l1.get(key)
            if entry is not None:
                self._l1.move_to_end(key)
                return entry
        if not settings.REDIS_URL:
            return None
        try:
            entry = caches[settings.TTS_AUDIO_CACHE_ALIAS].get(key)
        except Exception as exc:  # Redis down: a hit without alignment, never a failed request
            logger.debug("alignment cache unavailable: %s", exc)
            return None
        return entry if isinstance(entry, dict) else None

    def put(self, audio_key: str | None, alignment: dict[str, Any]) -> None:
        if not audio_key:
            return
        key = self._key(audio_key)
        size = _size(alignment)
        with self._lock:
            old = self._l1.pop(key, None)
            if old is not None:
                self._l1_size -= _size(old)
            if size <= _L1_CHARACTERS // 4:  # one entry may not push out a large part of the cache
                self._l1[key] = alignment
                self._l1_size += size
            while self._l1_size > _L1_CHARACTERS and self._l1:
                _, evicted = self._l1.popitem(last=False)
                self._l1_size -= _size(evicted)
        if not settings.REDIS_URL:
            return
        try:
            caches[settings.TTS_AUDIO_CACHE_ALIAS].set(key, alignment, timeout=settings.TTS_AUDIO_CACHE_TTL_S)
        except Exception as exc:
            logger.debug("alignment cache unavailable: %s", exc)

    def clear_local(self) -> None:
        with self._lock:
            self._l1.clear()
            self._l1_size = 0


alignment_cache = AlignmentCache()
