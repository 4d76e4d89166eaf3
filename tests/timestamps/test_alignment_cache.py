"""Cached entries' alignments (tts/synthesis/cache/alignment.py): kept as JSON, bounded by their bytes."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.cache import caches
from django.test import override_settings

from tts.synthesis.cache.alignment import AlignmentCache


def alignment(n: int, text: str = "abcdefghij") -> dict:
    chars = [text[i % len(text)] for i in range(n)]
    starts = [round(0.05 * i, 3) for i in range(n)]
    track = {"characters": chars, "character_start_times_seconds": starts, "character_end_times_seconds": starts}
    return {"alignment": track, "normalized_alignment": track}


@pytest.fixture
def cache() -> AlignmentCache:
    return AlignmentCache()


@pytest.fixture
def key() -> str:
    """A prefix of this test's own: with REDIS_URL the second level outlives the test (and the run)."""
    return f"test-{uuid.uuid4().hex}"


def test_it_gives_back_what_was_put(cache: AlignmentCache, key: str) -> None:
    entry = alignment(150)
    cache.put(f"{key}-1", entry)
    assert cache.get(f"{key}-1") == entry
    assert cache.get(f"{key}-2") is None and cache.get(None) is None


def test_the_bound_counts_the_json_bytes(cache: AlignmentCache, key: str) -> None:
    one = len(json.dumps(alignment(150), separators=(",", ":")))
    with override_settings(TTS_ALIGNMENT_CACHE_L1_BYTES=10 * one):
        for i in range(25):
            cache.put(f"{key}-{i}", alignment(150))
        held = [i for i in range(25) if cache._cache._l1_get(f"{key}-{i}:alignment") is not None]
    # Ten entries' worth of bytes: the newest ten stay, in this process.
    assert held == list(range(15, 25))
    assert cache._cache._l1_size <= 10 * one


def test_none_is_kept_in_process_at_zero(cache: AlignmentCache, key: str) -> None:
    with override_settings(TTS_ALIGNMENT_CACHE_L1_BYTES=0):
        cache.put(f"{key}-0", alignment(10))
        assert cache._cache._l1_get(f"{key}-0:alignment") is None


def test_an_older_dict_entry_in_redis_still_reads() -> None:
    from tts.synthesis.cache.alignment import _from_wire

    entry = alignment(5)
    assert json.loads(_from_wire(entry)) == entry
    with pytest.raises(TypeError):
        _from_wire(42)
    assert caches  # the L2 alias exists (used only with REDIS_URL)
