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

What is freed between live blocks stays with the process too: a web process
whose audio cache churns (entries of 10-400 KB evicted in LRU order) grew
about 1 MB per 100 requests in the soak bench, and ``malloc_trim(0)`` gave
23 MB of it back at once (gdb, at 1,500 requests). ``start_trimming`` calls
it every ``TTS_MALLOC_TRIM_S`` seconds from a thread of its own: glibc then
returns every whole free page, not only those at the top of the heap.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading

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


def trim_free_memory() -> bool:
    """Give the heap's free pages back to the system (glibc's malloc_trim); False where there is none."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return False
    trim(0)
    return True


_trimmer: threading.Thread | None = None
_trimmer_lock = threading.Lock()


def start_trimming(every_s: float) -> threading.Thread | None:
    """A daemon thread that calls ``trim_free_memory`` every ``every_s`` seconds (once per process; 0: none)."""
    global _trimmer
    if every_s <= 0 or not trim_free_memory():
        return None
    with _trimmer_lock:
        if _trimmer is None:

            def loop() -> None:
                stop = threading.Event()
                while not stop.wait(every_s):
                    trim_free_memory()

            _trimmer = threading.Thread(target=loop, name="malloc-trim", daemon=True)
            _trimmer.start()
    return _trimmer


def tune_malloc_from_settings() -> bool:
    from django.conf import settings

    start_trimming(settings.TTS_MALLOC_TRIM_S)
    return tune_malloc(arena_max=settings.TTS_MALLOC_ARENA_MAX, mmap_threshold=settings.TTS_MALLOC_MMAP_THRESHOLD)
