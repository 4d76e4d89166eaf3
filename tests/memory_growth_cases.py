"""Not part of the suite (the name is not test_*.py): tests/test_suite_memory.py runs it in a pytest of
its own, to see that the memory bound names the test that grew memory most."""

from __future__ import annotations

_KEPT: list[bytes] = []


def test_it_keeps_little() -> None:
    _KEPT.append(b"\x01" * (2 * 2**20))


def test_it_keeps_200_mb() -> None:
    # Every page written, so that all of it is resident.
    _KEPT.append(b"\x01" * (200 * 2**20))


def test_it_holds_300_mb_for_a_moment() -> None:
    held = b"\x01" * (300 * 2**20)
    assert held[-1] == 1
    del held


def test_it_keeps_nothing() -> None:
    assert sum(range(10)) == 45
