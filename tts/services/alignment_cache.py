"""The alignment that goes with a cached audio entry, so a cache hit still has timestamps.

Kept beside the audio cache, under the audio entry's key plus a suffix, in the
same kind of two-level cache (``infra/two_level_cache.py``: an in-process LRU,
the same django-redis alias when ``REDIS_URL`` is set, the same outage breaker).
An entry can be evicted apart from its audio; then a hit has no alignment.
Never raises.
"""

from __future__ import annotations

from typing import Any

from infra.two_level_cache import TwoLevelCache

#: In-process bound, in characters over all entries (an entry holds about 40 bytes a character).
_L1_CHARACTERS = 500_000


def _size(alignment: dict[str, Any]) -> int:
    track = alignment.get("normalized_alignment") or alignment.get("alignment") or {}
    return max(1, 2 * len(track.get("characters") or []))


def _from_wire(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise TypeError("not an alignment")
    return data


class AlignmentCache:
    """Alignments by the key of their audio entry."""

    def __init__(self) -> None:
        self._cache: TwoLevelCache[dict[str, Any]] = TwoLevelCache(
            "the alignment cache",
            size=_size,
            l1_capacity=lambda: _L1_CHARACTERS,
            max_entry=lambda: _L1_CHARACTERS,
            to_wire=lambda alignment: alignment,
            from_wire=_from_wire,
        )

    def get(self, audio_key: str | None) -> dict[str, Any] | None:
        return self._cache.get(f"{audio_key}:alignment") if audio_key else None

    def put(self, audio_key: str | None, alignment: dict[str, Any]) -> None:
        if audio_key:
            self._cache.put(f"{audio_key}:alignment", alignment)

    def clear_local(self) -> None:
        self._cache.clear_local()


alignment_cache = AlignmentCache()
