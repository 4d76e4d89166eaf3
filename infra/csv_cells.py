"""CSV exports a spreadsheet opens safely: no cell of ours becomes a formula.

A spreadsheet reads a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a
formula (and a leading tab or carriage return can hide one), so a value a
tenant chose, such as an API key named ``=HYPERLINK("https://evil", "x")``,
would run in another member's spreadsheet when they open the usage export.
Every CSV the platform writes goes through :func:`csv_writer`, which prefixes
such text cells with a single quote (OWASP's CSV-injection advice); numbers
are written as they are. This module imports no app.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any, Protocol

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class _Writable(Protocol):
    def write(self, s: str, /) -> Any: ...


def safe_cell(value: object) -> object:
    """``value``, with a quote in front when it is text a spreadsheet would read as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeCsvWriter:
    """``csv.writer`` whose rows are escaped with :func:`safe_cell`."""

    def __init__(self, out: _Writable) -> None:
        self._writer = csv.writer(out)

    def writerow(self, row: Iterable[object]) -> Any:
        return self._writer.writerow([safe_cell(cell) for cell in row])

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(out: _Writable) -> SafeCsvWriter:
    """The writer every CSV export uses."""
    return SafeCsvWriter(out)
