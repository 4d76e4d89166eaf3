"""What a request bills when preparing its text makes it much longer: the engine speaks the prepared text.

Normalization reads digits, amounts and symbols as words: ``1/`` and 1,000 sevens became 6,000
characters of "seven seven ...", six times the CPU per billed character of plain prose on joe
(``bench/bench_costs.py``, #32 item 2; the cost rule's target is 3x). Up to
``TTS_BILLING_FREE_EXPANSION`` (2.5) times the characters sent, plus ``TTS_BILLING_FREE_EXPANSION_CHARS``
(200), the prepared text costs nothing more (prose with numbers grows by 1.0-1.3, a short sentence
full of them, "Dr. Smith paid $3.50 on 1/2/2024.", by 2.6); past it a request is billed for the
prepared characters less those 200, divided by 2.5, so the work behind a billed character stays
bounded. The same
rule as pronunciation dictionaries' (``billed_characters``: the longer of the text and its spoken
form), with the tolerance normal text needs.

A live utterance (WebSocket text, Wyoming chunks) is billed by the same rule over the whole
utterance, piece by piece (``UtteranceBill``): one free expansion per utterance, not per piece, so
cutting a text into pieces buys no more engine work per billed character than sending it whole.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from tts.text.segment import Segment


def billed_for_prepared(billed: int, segments: Sequence[Segment]) -> int:
    """``billed`` (the characters sent, or spoken after dictionaries), or the prepared segments'
    characters beyond the free ones over ``TTS_BILLING_FREE_EXPANSION`` when that is more."""
    return _billed(billed, _prepared_characters(segments))


def _prepared_characters(segments: Sequence[Segment]) -> int:
    return sum(len(seg.text) for seg in segments)


def _billed(billed: int, prepared: int) -> int:
    over = prepared - settings.TTS_BILLING_FREE_EXPANSION_CHARS
    return max(billed, math.ceil(over / settings.TTS_BILLING_FREE_EXPANSION))


@dataclass(frozen=True)
class UtteranceBill:
    """What a live utterance's pieces add up to so far: the characters they bill before expansion
    (``billed``: sent, or spoken after dictionaries) and their prepared characters."""

    billed: int
    prepared: int

    @classmethod
    def opening(cls, billed: int, segments: Sequence[Segment]) -> UtteranceBill:
        """The utterance's first piece: ``billed`` characters, prepared into ``segments``."""
        return cls(billed, _prepared_characters(segments))

    def with_piece(self, billed: int, segments: Sequence[Segment]) -> tuple[int, UtteranceBill]:
        """What one more piece bills (the utterance's bill with it, less its bill before), and the
        utterance's totals with it."""
        after = UtteranceBill(self.billed + billed, self.prepared + _prepared_characters(segments))
        return _billed(after.billed, after.prepared) - _billed(self.billed, self.prepared), after
