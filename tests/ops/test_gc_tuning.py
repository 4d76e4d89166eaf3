"""Start-up objects frozen out of the collector's scans (infra/gc_tuning.py); later garbage still collected."""

from __future__ import annotations

import gc
import weakref

from infra.gc_tuning import freeze_startup_objects


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_it_freezes_what_is_alive_and_still_collects_later_cycles() -> None:
    try:
        assert freeze_startup_objects() > 1000  # Django, the test session: everything alive now
        # A reference cycle made after the freeze is found and freed by the next collection.
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()  # the rest of the suite as usual
