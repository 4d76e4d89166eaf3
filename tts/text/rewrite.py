"""Rewriting text while remembering where each piece came from.

Normalization turns "$3.50" into "three dollars and fifty cents"; timestamps
and segment offsets still have to point into the caller's original text. A
``Rewritten`` is the output text plus the list of replacements that produced
it, so any span of the output maps back to a span of the source.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Replacement:
    """``source[start:end]`` is spoken as ``text``."""

    start: int
    end: int
    text: str


class Rewritten:
    """Output text of a rewrite, with the map back to its source."""

    def __init__(self, source: str, replacements: Sequence[Replacement] = ()) -> None:
        self.source = source
        self.replacements = tuple(replacements)
        parts: list[str] = []
        # Parallel arrays: where each replacement sits in the output and the source.
        self._out_starts: list[int] = []
        self._out_ends: list[int] = []
        self._src_starts: list[int] = []
        self._src_ends: list[int] = []
        pos = 0
        out_len = 0
        for rep in replacements:
            if rep.start < pos or rep.end < rep.start:
                raise ValueError("replacements must be sorted and must not overlap")
            parts.append(source[pos : rep.start])
            out_len += rep.start - pos
            self._out_starts.append(out_len)
            self._src_starts.append(rep.start)
            parts.append(rep.text)
            out_len += len(rep.text)
            self._out_ends.append(out_len)
            self._src_ends.append(rep.end)
            pos = rep.end
        parts.append(source[pos:])
        self.text = "".join(parts)

    def output_spans(self) -> list[tuple[int, int]]:
        """Where each replacement's words sit in ``text``."""
        return list(zip(self._out_starts, self._out_ends, strict=True))

    def _start_to_source(self, pos: int) -> int:
        i = bisect_right(self._out_starts, pos) - 1
        if i < 0:
            return pos
        if pos < self._out_ends[i]:
            return self._src_starts[i]
        return self._src_ends[i] + (pos - self._out_ends[i])

    def _end_to_source(self, pos: int) -> int:
        i = bisect_left(self._out_starts, pos) - 1
        if i < 0:
            return pos
        if pos <= self._out_ends[i]:
            return self._src_ends[i]
        return self._src_ends[i] + (pos - self._out_ends[i])

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The source span that ``text[start:end]`` was made from.

        A span that begins or ends inside a replacement widens to the whole
        replaced source text: "fifty" inside "three dollars and fifty cents"
        maps to all of "$3.50", never to a slice of it.
        """
        src_start = self._start_to_source(start)
        src_end = self._end_to_source(end)
        return src_start, max(src_start, src_end)


def rewrite_matches(text: str, pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str | None]) -> Rewritten:
    """Replace every match of ``pattern`` by ``replace(match)``; None keeps it."""
    replacements: list[Replacement] = []
    for match in pattern.finditer(text):
        spoken = replace(match)
        if spoken is not None and spoken != match.group(0):
            replacements.append(Replacement(match.start(), match.end(), spoken))
    return Rewritten(text, replacements)
