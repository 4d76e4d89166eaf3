"""glibc malloc settings for long-running server processes.

A web process runs many threads (request threads, engine workers, ONNX
Runtime's), and glibc gives each thread that allocates while another holds
the lock an arena of its own, up to eight per core, each holding on to what
it once held: the soak bench (`bench/bench_soak.py`) saw a web process grow
from 817 to 1,025 MB over 2,000 requests, most of it in 64 MB thread arenas.
Large blocks (a sentence's activations, audio buffers) also end up inside
arenas once glibc's dynamic mmap threshold has grown past them. Both are
bounded here: few arenas, and large blocks always mapped, so that freeing
them gives the memory back to the system.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

logger = logging.getLogger(__name__)

# mallopt(3) parameters (glibc's malloc.h).
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8


def tune_malloc(*, arena_max: int, mmap_threshold: int) -> bool:
    """Apply the limits (0 leaves glibc's default); False where this is not glibc or it refused."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    ok = True
    if arena_max > 0:
        ok = mallopt(M_ARENA_MAX, arena_max) == 1 and ok
    if mmap_threshold > 0:
        ok = mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1 and ok
    if not ok:
        logger.warning("mallopt refused arena_max=%s mmap_threshold=%s", arena_max, mmap_threshold)
    return ok


def tune_malloc_from_settings() -> bool:
    from django.conf import settings

    return tune_malloc(arena_max=settings.TTS_MALLOC_ARENA_MAX, mmap_threshold=settings.TTS_MALLOC_MMAP_THRESHOLD)
