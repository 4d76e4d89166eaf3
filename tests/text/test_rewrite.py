"""Aligned rewriting: every output span maps back to the source it came from."""

from __future__ import annotations

import re

import pytest

from tts.text.normalize import normalize_aligned
from tts.text.rewrite import Replacement, Rewritten, rewrite_matches


def test_it_maps_untouched_text_one_to_one() -> None:
    rewritten = Rewritten("hello world")
    assert rewritten.text == "hello world"
    assert rewritten.source_span(6, 11) == (6, 11)


def test_it_widens_spans_that_cut_into_a_replacement() -> None:
    rewritten = Rewritten("pay $3.50 now", [Replacement(4, 9, "three dollars and fifty cents")])
    assert rewritten.text == "pay three dollars and fifty cents now"
    fifty = rewritten.text.index("fifty")
    assert rewritten.source_span(fifty, fifty + 5) == (4, 9)
    now = rewritten.text.index("now")
    assert rewritten.source_span(now, now + 3) == (10, 13)
    assert rewritten.source_span(0, len(rewritten.text)) == (0, 13)


def test_it_maps_removed_text() -> None:
    rewritten = Rewritten("a😀b", [Replacement(1, 2, "")])
    assert rewritten.text == "ab"
    assert rewritten.source_span(1, 2) == (2, 3)
    assert rewritten.source_span(0, 1) == (0, 1)


def test_it_refuses_overlapping_replacements() -> None:
    with pytest.raises(ValueError):
        Rewritten("abcdef", [Replacement(0, 3, "x"), Replacement(2, 4, "y")])


def test_it_keeps_matches_the_callback_declines() -> None:
    rewritten = rewrite_matches("1 2 3", re.compile(r"\d"), lambda m: None if m.group() == "2" else "n")
    assert rewritten.text == "n 2 n"


@pytest.mark.parametrize(
    ("text", "word", "source"),
    [
        ("Dr. Smith paid $3.50 today", "fifty", "$3.50"),
        ("Dr. Smith paid $3.50 today", "Doctor", "Dr."),
        ("on 1/2/2024 at noon", "twenty-four", "1/2/2024"),
        ("at 10:30am sharp", "sharp", "sharp"),
    ],
)
def test_it_maps_normalized_words_back_to_their_source(text: str, word: str, source: str) -> None:
    rewritten = normalize_aligned(text, language="en")
    start = rewritten.text.index(word)
    src_start, src_end = rewritten.source_span(start, start + len(word))
    assert text[src_start:src_end] == source
