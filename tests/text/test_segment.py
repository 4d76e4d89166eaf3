"""Segmentation corpus: sentence boundaries, long-sentence splits, offsets."""

# The corpus is real-world text: full-width punctuation, curly quotes and IPA are the point.
# ruff: noqa: RUF001

from __future__ import annotations

import itertools

import pytest

from tts.text.segment import Segment, segment_text, split_long
from tts.text.sentences import PARAGRAPH_PAUSE_MS

# (text, expected segment texts) with the default maximum.
CASES: list[tuple[str, list[str]]] = [
    ("Hello world.", ["Hello world."]),
    ("Hello. World.", ["Hello.", "World."]),
    ("Hello! World? Yes.", ["Hello!", "World?", "Yes."]),
    ("What?! Really?", ["What?!", "Really?"]),
    ("No final punctuation", ["No final punctuation"]),
    ("   padded   ", ["padded"]),
    ("", []),
    ("   \n\n  ", []),
    # The traps: these periods end nothing.
    ("Dr. Smith paid $3.50 on 1/2/2024 at 10:30am.", ["Dr. Smith paid $3.50 on 1/2/2024 at 10:30am."]),
    ("Pi is 3.14 exactly.", ["Pi is 3.14 exactly."]),
    ("Pi is 3.14. Yes.", ["Pi is 3.14.", "Yes."]),
    ("The U.S.A. is big.", ["The U.S.A. is big."]),
    ("I live in the U.S.A. It is big.", ["I live in the U.S.A.", "It is big."]),
    ("The U.S. Army came.", ["The U.S. Army came."]),
    ("Use tools, e.g. hammers.", ["Use tools, e.g. hammers."]),
    ("Use tools, e.g. Hammers.", ["Use tools, e.g. Hammers."]),
    ("That is, i.e. the end.", ["That is, i.e. the end."]),
    ("Mr. and Mrs. Smith came.", ["Mr. and Mrs. Smith came."]),
    ("Prof. X and Gen. Y met.", ["Prof. X and Gen. Y met."]),
    ("Meet Dr. Who tonight.", ["Meet Dr. Who tonight."]),
    ("I live on Elm St. The house is red.", ["I live on Elm St.", "The house is red."]),
    ("St. Louis is nice.", ["St. Louis is nice."]),
    ("Apples, pears, etc. Then plums.", ["Apples, pears, etc.", "Then plums."]),
    ("Apples, pears, etc. and plums.", ["Apples, pears, etc. and plums."]),
    ("Call me at 5 p.m. tomorrow.", ["Call me at 5 p.m. tomorrow."]),
    ("It ended at 5 p.m. The next day was calm.", ["It ended at 5 p.m.", "The next day was calm."]),
    ("J. R. R. Tolkien wrote it.", ["J. R. R. Tolkien wrote it."]),
    ("See Fig. 3 and No. 5.", ["See Fig. 3 and No. 5."]),
    ("Lakers vs. Celtics tonight.", ["Lakers vs. Celtics tonight."]),
    ("It is approx. five.", ["It is approx. five."]),
    ("Apple Inc. makes phones.", ["Apple Inc. makes phones."]),
    ("I work at Apple Inc. It is fine.", ["I work at Apple Inc.", "It is fine."]),
    ("On Jan. 5 it snowed.", ["On Jan. 5 it snowed."]),
    ("Visit example.com today.", ["Visit example.com today."]),
    ("Visit example.com. Then leave.", ["Visit example.com.", "Then leave."]),
    ("Version 1.2.3 is out.", ["Version 1.2.3 is out."]),
    ("Mail a.b@c.io now.", ["Mail a.b@c.io now."]),
    ("Mr.Smith had no space.", ["Mr.Smith had no space."]),
    # Quotes and brackets.
    ('He said "Stop!" and left.', ['He said "Stop!" and left.']),
    ('He said "Stop!" Then he left.', ['He said "Stop!"', "Then he left."]),
    ('"Hello." She smiled.', ['"Hello."', "She smiled."]),
    ("(Really?) yes.", ["(Really?) yes."]),
    ("He asked (why?). Nobody knew.", ["He asked (why?).", "Nobody knew."]),
    ("“Done.” Next.", ["“Done.”", "Next."]),
    # Ellipses.
    ("Wait... what?", ["Wait... what?"]),
    ("Wait... Then it came.", ["Wait...", "Then it came."]),
    ("Wait… Then it came.", ["Wait…", "Then it came."]),
    ("Hello. ... World.", ["Hello.", "World."]),
    # A full stop before a lowercase word reads on, as Piper (espeak-ng) reads it (#42 item 4);
    # before a digit it ends the sentence, as there.
    ("I saw it. then left", ["I saw it. then left"]),
    ("It arrives on Thursday. a3f9c2d1", ["It arrives on Thursday. a3f9c2d1"]),
    ("It arrives on Thursday. 1f3a9c0e", ["It arrives on Thursday.", "1f3a9c0e"]),
    # CJK: no spaces, full-width punctuation.
    ("你好。世界！", ["你好。", "世界！"]),
    ("你好。世界！我们走吧；好的", ["你好。", "世界！", "我们走吧；", "好的"]),
    ("他说：“你好。”然后走了。", ["他说：“你好。”", "然后走了。"]),
    ("今天天气很好，我们去公园吧？", ["今天天气很好，我们去公园吧？"]),
    ("こんにちは。元気ですか？", ["こんにちは。", "元気ですか？"]),
    ("안녕하세요. 반갑습니다.", ["안녕하세요.", "반갑습니다."]),
    ("圆周率是3.14。对吗？", ["圆周率是3.14。", "对吗？"]),
    # Mixed scripts, emoji.
    ("I said 你好。Then left.", ["I said 你好。", "Then left."]),
    ("Привет. Как дела?", ["Привет.", "Как дела?"]),
    ("Great 😀. Next 🎉!", ["Great 😀.", "Next 🎉!"]),
    ("😀😀😀", []),
    ("نعم؟ لا.", ["نعم؟", "لا."]),
    ("यह है। वह है।", ["यह है।", "वह है।"]),
    # Lines, lists, headings.
    ("1. First item\n2. Second item", ["1. First item", "2. Second item"]),
    ("- apples\n- pears", ["- apples", "- pears"]),
    ("Title\nThe body text follows here.", ["Title", "The body text follows here."]),
    (
        "This is hard-wrapped prose that continues on\nthe next line without a break.",
        ["This is hard-wrapped prose that continues on\nthe next line without a break."],
    ),
    # Phoneme blocks are opaque.
    ("Say [[ ˈhɛ.loʊ. ]] now. Next.", ["Say [[ ˈhɛ.loʊ. ]] now.", "Next."]),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[f"{i:03d}" for i in range(len(CASES))])
def test_it_splits_sentences(text: str, expected: list[str]) -> None:
    segments = segment_text(text)
    assert [s.text.replace(" ", "") for s in segments] == [e.replace(" ", "").replace("\n", "") for e in expected]
    for segment in segments:
        # Offsets always point at the text the segment came from.
        assert " ".join(text[segment.source_start : segment.source_end].split()) == segment.text


# (text, max_chars, expected pieces): long sentences split at the best boundary.
LONG_CASES: list[tuple[str, int, list[str]]] = [
    (
        "This is a long sentence, with a comma; and a clause that goes on and on.",
        40,
        ["This is a long sentence, with a comma;", "and a clause that goes on and on."],
    ),
    ("one, two, three, four, five, six, seven", 20, ["one, two, three,", "four, five,", "six, seven"]),
    ("alpha beta gamma delta epsilon zeta", 12, ["alpha beta", "gamma delta", "epsilon zeta"]),
    (
        "We went home and we slept well and we woke up late",
        25,
        ["We went home", "and we slept well", "and we woke up late"],
    ),
    ("我们今天去公园散步，然后去吃饭，最后回家睡觉。", 12, ["我们今天去公园散步，", "然后去吃饭，", "最后回家睡觉。"]),
    # Chinese without punctuation: cut between words (jieba's), never inside one.
    ("中文" * 10, 8, ["中文中文中文中文", "中文中文中文", "中文中文中文"]),
    (
        "我们今天去公园散步然后去吃饭最后回家睡觉银行行长说这很重要",
        12,
        ["我们今天去公园散步然后", "去吃饭最后回家睡觉", "银行行长说这很重要"],
    ),
    ("a" * 25, 10, ["a" * 9, "a" * 8, "a" * 8]),
    (
        "It rained — we stayed in, played cards — and laughed.",
        30,
        ["It rained —", "we stayed in, played cards —", "and laughed."],
    ),
    ("short", 3, ["sho", "rt"]),
    ("x [[ ˈlɒŋ.fəʊ.niːm ]] y", 10, ["x", "[[ ˈlɒŋ.fəʊ.niːm ]]", "y"]),
]


@pytest.mark.parametrize(
    ("text", "max_chars", "expected"), LONG_CASES, ids=[f"{i:02d}" for i in range(len(LONG_CASES))]
)
def test_it_splits_long_sentences_where_a_reader_would_pause(text: str, max_chars: int, expected: list[str]) -> None:
    assert [text[s:e] for s, e in split_long(text, max_chars)] == expected


def test_it_has_a_large_corpus() -> None:
    assert len(CASES) + len(LONG_CASES) >= 75


@pytest.mark.parametrize(
    "text",
    [
        " ".join(["word"] * 2500),  # 10,000+ characters, no punctuation
        "a" * 10_000,  # no spaces at all
        "中" * 10_000,  # CJK without punctuation
        "😀" * 3000,
        ("The quick brown fox jumps over the lazy dog, " * 250).strip(),
    ],
    ids=["words", "one-word", "cjk", "emoji", "commas"],
)
@pytest.mark.parametrize("max_chars", [50, 400])
def test_it_keeps_every_segment_under_the_maximum(text: str, max_chars: int) -> None:
    segments = segment_text(text, max_chars=max_chars)
    assert all(len(s.text) <= max_chars for s in segments)
    spoken = "".join(s.text for s in segments).replace(" ", "")
    expected = "" if text.startswith("😀") else text.replace(" ", "")
    assert spoken == expected
    # Segments are in order and do not overlap.
    for before, after in itertools.pairwise(segments):
        assert before.source_end <= after.source_start


def test_it_never_splits_inside_an_emoji_sequence() -> None:
    family = "👨\u200d👩\u200d👧"
    segments = split_long("x" + family * 20, 7)
    text = "x" + family * 20
    for start, end in segments:
        assert text[start] != "\u200d" and text[end - 1] != "\u200d"


def test_it_pauses_between_paragraphs_only() -> None:
    segments = segment_text("First. Second.\n\nThird.\n\n\n")
    assert [(s.text, s.pause_after_ms) for s in segments] == [
        ("First.", 0),
        ("Second.", PARAGRAPH_PAUSE_MS),
        ("Third.", 0),
    ]


def test_it_can_turn_the_paragraph_pause_off() -> None:
    segments = segment_text("One.\n\nTwo.", paragraph_pause_ms=0)
    assert [s.pause_after_ms for s in segments] == [0, 0]


def test_it_points_offsets_at_the_original_text() -> None:
    text = "  Hello there.  How are you?"
    assert segment_text(text) == [Segment("Hello there.", 2, 14), Segment("How are you?", 16, 28)]


def test_it_rejects_a_maximum_below_one() -> None:
    with pytest.raises(ValueError):
        split_long("abc", 0)


# --- phoneme blocks longer than the maximum ------------------------------------------------

PHONEME_WORDS = ["hɛˈloʊ", "ˈwɜːld", "ðə", "ˈkwɪk", "bɹaʊn", "fɑks"]


def _block(n_words: int) -> str:
    return "[[ " + " ".join(PHONEME_WORDS[i % len(PHONEME_WORDS)] for i in range(n_words)) + " ]]"


@pytest.mark.parametrize("max_chars", [20, 60, 400])
def test_a_phoneme_block_longer_than_the_maximum_is_cut_into_blocks_that_fit(max_chars: int) -> None:
    block = _block(900)  # about 5,000 characters, as one hostile request sent
    assert len(block) > 4900
    segments = segment_text(f"Before. {block} After.", max_chars=max_chars)
    assert all(len(s.text) <= max_chars for s in segments), max(len(s.text) for s in segments)
    inner = [s.text for s in segments if s.text.startswith("[[")]
    # Every piece is whole blocks: brackets balanced, never read aloud.
    for text in inner:
        assert text.count("[[") == text.count("]]") >= 1
        assert text.endswith("]]")
    # Nothing lost, nothing reordered.
    words = [w for text in inner for w in text.replace("[[", " ").replace("]]", " ").split()]
    assert words == block[2:-2].split()
    assert segments[0].text == "Before." and segments[-1].text == "After."


def test_a_phoneme_word_longer_than_a_block_is_cut_between_characters() -> None:
    block = "[[ " + "ə̃" * 100 + " ]]"
    segments = segment_text(block, max_chars=20)
    assert all(len(s.text) <= 20 for s in segments)
    joined = "".join(s.text.replace("[[", "").replace("]]", "").replace(" ", "") for s in segments)
    assert joined == "ə̃" * 100
    # A combining mark never starts a piece (it stays with its letter).
    assert all(not s.text[3].startswith("\u0303") for s in segments)


def test_a_phoneme_block_that_fits_stays_one_block() -> None:
    assert [s.text for s in segment_text("Say [[ ˈhɛ.loʊ ]] now.", max_chars=400)] == ["Say [[ ˈhɛ.loʊ ]] now."]
