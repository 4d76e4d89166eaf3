"""Where a stream's first sentence is cut after its first clause (``tts.text.first_clause``)."""

# Chinese and Japanese text: full-width punctuation is the point.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from tts.text.first_clause import first_clause_cut, split_first_clause, spoken_length
from tts.text.segment import Segment


def test_a_cjk_character_counts_as_three_letters() -> None:
    assert spoken_length("今天，") == 6 and spoken_length("Hello, you.") == 8 and spoken_length("きょうは") == 12


@pytest.mark.parametrize(
    ("text", "head"),
    [
        ("今天天气很好，我们一起去公园散步吧。", "今天天气很好，"),
        ("好，今天天气很好，我们一起去公园散步吧。", "好，今天天气很好，"),  # the first pause comes too soon
        ("今日は晴れです、公園を散歩しましょう。", "今日は晴れです、"),
        ("When the rain stops, we will walk to the park.", "When the rain stops,"),
        ("Note: the park closes at nine tonight.", None),  # 4 letters before the first pause: too short
        ("今天天气很好，走吧。", None),  # a stub after the pause
        ("今天天气很好我们一起去公园散步吧。", None),  # no pause at all
        ("Say [[ a, b, c, d, e, f ]] and then we walk on.", None),  # never inside a phoneme block
    ],
)
def test_it_cuts_at_the_first_pause_with_enough_on_both_sides(text: str, head: str | None) -> None:
    cut = first_clause_cut(text, 12)
    assert (text[:cut] if cut is not None else None) == head


def test_it_never_cuts_with_a_minimum_of_zero() -> None:
    assert first_clause_cut("今天天气很好，我们一起去公园散步吧。", 0) is None


def test_the_pieces_keep_the_sentence_and_split_its_source() -> None:
    text = "今天天气很好，我们一起去公园散步吧。"
    segment = Segment(text, source_start=10, source_end=10 + len(text), pause_after_ms=0, language="zh")
    pieces = split_first_clause(segment, min_letters=12, pause_ms=150)
    assert pieces is not None
    head, rest = pieces
    assert (head.text, head.source_start, head.source_end, head.pause_after_ms) == ("今天天气很好，", 10, 17, 150)
    assert (rest.text, rest.source_start, rest.source_end, rest.pause_after_ms) == ("我们一起去公园散步吧。", 17, 28, 0)
    assert head.continued and not head.continuation and rest.continuation and not rest.continued
    assert head.language == rest.language == "zh"
    # A piece is never cut again.
    assert split_first_clause(head, min_letters=1, pause_ms=150) is None
    assert split_first_clause(rest, min_letters=1, pause_ms=150) is None


def test_source_offsets_follow_in_proportion_where_normalization_changed_the_length() -> None:
    segment = Segment("When the rain stops, we will walk to the park.", source_start=0, source_end=23)
    head, rest = split_first_clause(segment, min_letters=12, pause_ms=150) or (None, None)
    assert head is not None and rest is not None
    assert head.source_end == rest.source_start == round(20 * 23 / 46)
