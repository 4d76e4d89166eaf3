"""The garbage collector in a long-running server: what start-up made, it need not scan again.

A web process holds a few million objects from start-up (Django, DRF, the
ONNX graphs' Python side, Kokoro's dictionaries). CPython's oldest generation
rescans all of them every so often: in a daphne serving cache hits that was a
117-220 ms pause each time (``gc.callbacks``), the p99 of a hit 82-101 ms
against a p50 of 7 ms. ``gc.freeze()`` moves everything alive now into a
generation the collector ignores, so later full collections look at what
requests made since (12-44 ms), and a hit's p99 came down to 16 ms
(docs/benchmarks.md). Objects made afterwards are collected as before.
"""

from __future__ import annotations

import gc
import logging

logger = logging.getLogger(__name__)


def freeze_startup_objects() -> int:
    """Collect what is garbage now, then exclude everything left from later collections; how many."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    logger.debug("gc: %d start-up objects frozen", frozen)
    return frozen
