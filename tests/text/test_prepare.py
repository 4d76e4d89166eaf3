"""prepare_text: the one entry point every synthesis path uses."""

# The corpus is real-world text: full-width punctuation, curly quotes and IPA are the point.
# ruff: noqa: RUF001

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tts.text.prepare import Segment, TextError, prepare_text
from tts.text.sentences import PARAGRAPH_PAUSE_MS


def test_it_normalizes_the_headline_trap_in_one_segment() -> None:
    text = "Dr. Smith paid $3.50 on 1/2/2024 at 10:30am."
    assert prepare_text(text) == [
        Segment(
            "Doctor Smith paid three dollars and fifty cents on January second, twenty twenty-four at ten thirty a-m.",
            0,
            len(text),
        )
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Pi is 3.14.", ["Pi is three point one four."]),
        ("I live in the U.S.A. It is big.", ["I live in the U-S-eh.", "It is big."]),
        ("Hi. 😀 Bye.", ["Hi.", "Bye."]),
        ("😀🎉", []),
        ("Apples, etc. Then pears.", ["Apples, et cetera.", "Then pears."]),
        ("今天是2024年1月2日。价格3.5元！", ["今天是二零二四年一月二日。", "价格三点五元！"]),
        ("Привет, у меня 5 км.", ["Привет, у меня 5 км."]),  # no Russian rules: left to espeak-ng
        ("Say [[ ˈhɛ.loʊ 5 ]] twice.", ["Say [[ ˈhɛ.loʊ 5 ]] twice."]),
        ("a\x00b \ud800 c\u200bd", ["a b c d"]),
    ],
)
def test_it_prepares_plain_text(text: str, expected: list[str]) -> None:
    assert [s.text for s in prepare_text(text)] == expected


def test_it_maps_segments_back_to_the_original_text() -> None:
    text = "Dr. Smith arrived.  He paid $5 on 1/2/2024!\n\nNew paragraph here."
    segments = prepare_text(text)
    assert [text[s.source_start : s.source_end] for s in segments] == [
        "Dr. Smith arrived.",
        "He paid $5 on 1/2/2024!",
        "New paragraph here.",
    ]
    assert [s.pause_after_ms for s in segments] == [0, PARAGRAPH_PAUSE_MS, 0]


def test_it_maps_split_long_sentences_back_to_their_words() -> None:
    text = "I paid $3.50, then $4.25, then $5.75, and then I went home for the day."
    segments = prepare_text(text, max_segment_chars=40)
    assert all(len(s.text) <= 40 for s in segments)
    # Amounts are never cut in half ("then five dollars" / "and seventy-five cents").
    assert [text[s.source_start : s.source_end] for s in segments] == [
        "I paid $3.50,",
        "then $4.25,",
        "then",
        "$5.75,",
        "and then I went home for the day.",
    ]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("auto", "I paid three dollars."), ("on", "I paid three dollars."), ("off", "I paid $3.")],
)
def test_it_obeys_the_normalization_switch(mode: str, expected: str) -> None:
    assert [s.text for s in prepare_text("I paid $3.", normalization=mode)] == [expected]  # type: ignore[arg-type]


def test_it_uses_num2words_for_other_languages_when_on() -> None:
    assert [s.text for s in prepare_text("Ich habe 42 Äpfel.", language="de", normalization="on")] == [
        "Ich habe zweiundvierzig Äpfel."
    ]
    assert [s.text for s in prepare_text("Ich habe 42 Äpfel.", language="de")] == ["Ich habe 42 Äpfel."]


def test_it_refuses_an_unknown_normalization_value() -> None:
    with pytest.raises(TextError) as caught:
        prepare_text("hi", normalization="always")  # type: ignore[arg-type]
    assert (caught.value.status, caught.value.field) == (400, "apply_text_normalization")


def test_it_is_deterministic() -> None:
    text = "Dr. Smith paid $3.50. " * 50 + "\n\n" + "你好。" * 20 + " " + "word " * 500
    assert prepare_text(text) == prepare_text(text)


def test_it_keeps_a_10k_paragraph_without_punctuation_under_the_maximum() -> None:
    text = " ".join(f"word{i % 7}" for i in range(1700))
    assert len(text) > 10_000
    segments = prepare_text(text, max_segment_chars=400)
    assert all(len(s.text) <= 400 for s in segments)
    assert " ".join(s.text for s in segments) == " ".join(text.split())
    assert segments[0].source_start == 0 and segments[-1].source_end == len(text)


# Inputs built to make careless regular expressions backtrack for minutes.
ADVERSARIAL = {
    "dots": "." * 20_000 + "x",
    "digits": "1" * 20_000 + "x",
    "digits-cjk": "中" + "1" * 20_000,
    "brackets": "[[" * 20_000,
    "brackets-lines": "[[x\n" * 10_000,
    "stars": "*" * 20_000 + "x",
    "ellipsis": "…" * 20_000 + "x",
    "questions": "?" * 20_000 + "x",
    "joiners": "\u200d" * 20_000,
    "combining": "a" + "\u0301" * 20_000,
    "initials": "A. " * 7_000,
    "lt-flood": "<speak>" + "<" * 100_000,
}


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_it_stays_linear_on_adversarial_text(name: str) -> None:
    started = time.monotonic()
    try:
        prepare_text(ADVERSARIAL[name])
    except TextError:
        pass
    assert time.monotonic() - started < 2.0


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(text=st.text(max_size=400), max_chars=st.integers(min_value=5, max_value=120))
def test_it_yields_ordered_in_bounds_segments_for_any_text(text: str, max_chars: int) -> None:
    if text.lstrip().startswith("<"):
        text = "x" + text  # plain text only here; SSML has its own fuzz tests
    segments = prepare_text(text, max_segment_chars=max_chars)
    previous = (0, 0)
    for segment in segments:
        assert segment.text == segment.text.strip() and segment.text
        assert 0 <= segment.source_start <= segment.source_end <= len(text)
        # In order; pieces of one expansion too long to keep whole share its span.
        assert segment.source_start >= previous[0] and segment.source_end >= previous[1]
        previous = (segment.source_start, segment.source_end)
    assert prepare_text(text, max_segment_chars=max_chars) == segments
