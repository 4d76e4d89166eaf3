"""The alignment that goes with a cached audio entry, so a cache hit still has timestamps.

Kept beside the audio cache, under the audio entry's key plus a suffix, in the
same kind of two-level cache (``infra/two_level_cache.py``: an in-process LRU,
the same django-redis alias when ``REDIS_URL`` is set, the same outage breaker).
An entry can be evicted apart from its audio; then a hit has no alignment.
Never raises.

Entries are held as their JSON text, and the in-process bound
(``TTS_ALIGNMENT_CACHE_L1_BYTES``) counts its bytes: as Python lists and
floats an alignment took about 143 bytes a character (36 as JSON), and the
old bound, in characters at an assumed 40 bytes each, let the cache grow to
about four times what it said (the soak bench: +36 MB over 10,000 requests).
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from infra.two_level_cache import TwoLevelCache

#: Larger alignments are not cached (a request's 5,000 characters make about 180 KB).
_MAX_ENTRY_BYTES = 4 * 1024 * 1024


def _from_wire(data: Any) -> str:
    if isinstance(data, dict):  # an entry written by an older version, as a dict
        return json.dumps(data, separators=(",", ":"))
    if not isinstance(data, str):
        raise TypeError("not an alignment")
    return data


class AlignmentCache:
    """Alignments by the key of their audio entry."""

    def __init__(self) -> None:
        self._cache: TwoLevelCache[str] = TwoLevelCache(
            "the alignment cache",
            size=len,
            l1_capacity=lambda: int(settings.TTS_ALIGNMENT_CACHE_L1_BYTES),
            max_entry=lambda: _MAX_ENTRY_BYTES,
            to_wire=lambda text: text,
            from_wire=_from_wire,
        )

    def get(self, audio_key: str | None) -> dict[str, Any] | None:
        text = self._cache.get(f"{audio_key}:alignment") if audio_key else None
        if text is None:
            return None
        try:
            data = json.loads(text)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def put(self, audio_key: str | None, alignment: dict[str, Any]) -> None:
        if audio_key:
            self._cache.put(f"{audio_key}:alignment", json.dumps(alignment, separators=(",", ":")))

    def clear_local(self) -> None:
        self._cache.clear_local()


alignment_cache = AlignmentCache()
