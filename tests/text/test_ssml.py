"""The SSML subset: each supported tag, what unsupported ones do, and errors."""

# The corpus is real-world text: full-width punctuation, curly quotes and IPA are the point.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from tts.text.prepare import TextError, prepare_text
from tts.text.segment import Segment
from tts.text.ssml import MAX_BREAK_MS, Pause, Run, is_ssml, parse_ssml


def speak(body: str, **kwargs: object) -> list[tuple[str, float, int]]:
    segments = prepare_text(f"<speak>{body}</speak>", **kwargs)  # type: ignore[arg-type]
    return [(s.text, s.rate, s.pause_after_ms) for s in segments]


def texts(body: str, **kwargs: object) -> list[str]:
    return [text for text, _, _ in speak(body, **kwargs)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<speak>hi</speak>", True),
        ("  \n<speak xml:lang='en'>hi</speak>", True),
        ('<?xml version="1.0"?><speak>hi</speak>', True),
        ("<!DOCTYPE speak><speak/>", True),
        ("<speaker>hi</speaker>", False),
        ("Hello <speak>", False),
        ("speak", False),
    ],
)
def test_it_recognizes_ssml(text: str, expected: bool) -> None:
    assert is_ssml(text) is expected


# (body inside <speak>, expected (text, rate, pause) per segment); rate may be pytest.approx
CASES: list[tuple[str, list[tuple[str, object, int]]]] = [
    ("Hello world.", [("Hello world.", 1.0, 0)]),
    ('Hello <break time="1s"/> world.', [("Hello", 1.0, 1000), ("world.", 1.0, 0)]),
    ('Hello <break time="250ms"/> world.', [("Hello", 1.0, 250), ("world.", 1.0, 0)]),
    ('Hello <break time="1.5s"/> world.', [("Hello", 1.0, 1500), ("world.", 1.0, 0)]),
    ('Hello <break time="60s"/> world.', [("Hello", 1.0, MAX_BREAK_MS), ("world.", 1.0, 0)]),
    ('Hello <break strength="strong"/> world.', [("Hello", 1.0, 800), ("world.", 1.0, 0)]),
    ('Hello <break strength="none"/> world.', [("Hello", 1.0, 0), ("world.", 1.0, 0)]),
    ("Hello <break/> world.", [("Hello", 1.0, 500), ("world.", 1.0, 0)]),
    ('A <break time="1s"/><break time="2s"/> B', [("A", 1.0, 3000), ("B", 1.0, 0)]),
    ('<break time="2s"/>Hello', [("Hello", 1.0, 0)]),
    ('Hello<break time="2s"/>', [("Hello", 1.0, 2000)]),
    ('<prosody rate="slow">Slow.</prosody>', [("Slow.", 0.8, 0)]),
    ('<prosody rate="x-slow">Slow.</prosody>', [("Slow.", 0.6, 0)]),
    ('<prosody rate="fast">Fast.</prosody>', [("Fast.", 1.25, 0)]),
    ('<prosody rate="x-fast">Fast.</prosody>', [("Fast.", 1.5, 0)]),
    ('<prosody rate="150%">Fast.</prosody>', [("Fast.", 1.5, 0)]),
    ('<prosody rate="1.2">Fast.</prosody>', [("Fast.", 1.2, 0)]),
    ('<prosody rate="1000%">Fast.</prosody>', [("Fast.", 4.0, 0)]),
    ('<prosody rate="1%">Slow.</prosody>', [("Slow.", 0.25, 0)]),
    ('<prosody rate="slow"><prosody rate="+50%">x</prosody></prosody>', [("x", pytest.approx(1.2), 0)]),
    ('<prosody rate="fast"><prosody rate="-20%">x</prosody></prosody>', [("x", pytest.approx(1.0), 0)]),
    ('<prosody rate="fast"><prosody rate="slow">x</prosody></prosody>', [("x", 0.8, 0)]),
    ('<prosody pitch="+10%" volume="loud">Same rate.</prosody>', [("Same rate.", 1.0, 0)]),
    ('I am <prosody rate="slow">very</prosody> tired.', [("I am", 1.0, 0), ("very", 0.8, 0), ("tired.", 1.0, 0)]),
    ('<say-as interpret-as="characters">ABC1</say-as>', [("eh B C one", 1.0, 0)]),
    ('<say-as interpret-as="spell-out">hi</say-as>', [("H I", 1.0, 0)]),
    ('<say-as interpret-as="digits">1234</say-as>', [("one two three four", 1.0, 0)]),
    ('<say-as interpret-as="cardinal">1234</say-as>', [("one thousand two hundred thirty-four", 1.0, 0)]),
    ('<say-as interpret-as="cardinal">-3.5</say-as>', [("minus three point five", 1.0, 0)]),
    ('<say-as interpret-as="ordinal">3</say-as>', [("third", 1.0, 0)]),
    ('<say-as interpret-as="ordinal">21st</say-as>', [("twenty-first", 1.0, 0)]),
    ('<say-as interpret-as="date">1/2/2024</say-as>', [("January second, twenty twenty-four", 1.0, 0)]),
    ('<say-as interpret-as="date" format="dmy">02/01/2024</say-as>', [("January second, twenty twenty-four", 1.0, 0)]),
    ('<say-as interpret-as="date" format="ymd">2024-01-02</say-as>', [("January second, twenty twenty-four", 1.0, 0)]),
    ('<say-as interpret-as="date">2024-01-02</say-as>', [("January second, twenty twenty-four", 1.0, 0)]),
    ('<say-as interpret-as="date" format="md">12/25</say-as>', [("December twenty-fifth", 1.0, 0)]),
    ('<say-as interpret-as="date" format="y">1999</say-as>', [("nineteen ninety-nine", 1.0, 0)]),
    ('<say-as interpret-as="date" format="my">Jan 2024</say-as>', [("January twenty twenty-four", 1.0, 0)]),
    ('<say-as interpret-as="date">May 26, 5</say-as>', [("May twenty-sixth, five", 1.0, 0)]),
    (
        '<say-as interpret-as="telephone">+1 (555) 123-4567</say-as>',
        [("plus one, five five five, one two three, four five six seven", 1.0, 0)],
    ),
    ('<say-as interpret-as="time">10:30pm</say-as>', [("ten thirty p-m", 1.0, 0)]),
    # Content that does not fit the interpretation is read as ordinary text.
    ('<say-as interpret-as="cardinal">lots</say-as>', [("lots", 1.0, 0)]),
    ('<say-as interpret-as="date">whenever 5</say-as>', [("whenever five", 1.0, 0)]),
    ('<say-as interpret-as="expletive">darn</say-as>', [("darn", 1.0, 0)]),
    ('<say-as interpret-as="characters"><emphasis>AB</emphasis></say-as>', [("eh B", 1.0, 0)]),
    ('<sub alias="World Wide Web Consortium">W3C</sub> rocks', [("World Wide Web Consortium rocks", 1.0, 0)]),
    ('<sub alias="">skipped</sub> words', [("words", 1.0, 0)]),
    ("<p>One.</p><p>Two.</p>", [("One.", 1.0, 500), ("Two.", 1.0, 0)]),
    ("<p><s>One</s><s>Two</s></p>", [("One", 1.0, 0), ("Two", 1.0, 0)]),
    ("Intro<s>Sentence</s>outro", [("Intro", 1.0, 0), ("Sentence", 1.0, 0), ("outro", 1.0, 0)]),
    ('Say <phoneme alphabet="ipa" ph="təˈmeɪtoʊ">tomato</phoneme>.', [("Say [[ təˈmeɪtoʊ ]].", 1.0, 0)]),
    ('Say <phoneme ph="ˈhɛ.loʊ">hello</phoneme>. Next.', [("Say [[ ˈhɛ.loʊ ]].", 1.0, 0), ("Next.", 1.0, 0)]),
    ('Say <phoneme alphabet="x-sampa" ph="t@\'meItoU">tomato</phoneme>.', [("Say tomato.", 1.0, 0)]),
    # Unsupported elements: their text is spoken, the markup never is.
    ("<emphasis level='strong'>Big</emphasis> deal.", [("Big deal.", 1.0, 0)]),
    ("<voice name='x'>Hi</voice> there.", [("Hi there.", 1.0, 0)]),
    ("<lang xml:lang='fr-FR'>Bonjour</lang> all.", [("Bonjour all.", 1.0, 0)]),
    ("<audio src='http://example.com/a.mp3'>Fallback text</audio>", [("Fallback text", 1.0, 0)]),
    ("A<mark name='m1'/>B", [("AB", 1.0, 0)]),
    ("<foo>Unknown</foo> tag.", [("Unknown tag.", 1.0, 0)]),
    ("<x:thing xmlns:x='urn:other'>Other</x:thing> vocabulary.", [("Other vocabulary.", 1.0, 0)]),
    ("<![CDATA[a < b]]> ok", [("a < b ok", 1.0, 0)]),
    ("Before<!-- a comment -->after<?pi data?>.", [("Beforeafter.", 1.0, 0)]),
    ("Fish &amp; chips &#65;&#x42;", [("Fish and chips AB", 1.0, 0)]),
    # Whitespace in markup is not a paragraph.
    ("\n   Line one\n\n\n   line two\n", [("Line one line two", 1.0, 0)]),
    # Normalization applies to the text between tags, across inline tags.
    (
        "I paid $3.50 on <emphasis>1/2/2024</emphasis>.",
        [("I paid three dollars and fifty cents on January second, twenty twenty-four.", 1.0, 0)],
    ),
    ("Call me at <emphasis>5</emphasis> pm", [("Call me at five p-m", 1.0, 0)]),
    ("", []),
]


@pytest.mark.parametrize(("body", "expected"), CASES, ids=[f"{i:02d}" for i in range(len(CASES))])
def test_it_speaks_the_ssml_subset(body: str, expected: list[tuple[str, object, int]]) -> None:
    assert speak(body) == expected


def test_it_accepts_the_full_ssml_namespace_and_prolog() -> None:
    document = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<speak version="1.1" xmlns="http://www.w3.org/2001/10/synthesis" xml:lang="en-US">'
        '<p>Dr. Smith <break time="300ms"/> paid <say-as interpret-as="cardinal">12</say-as>.</p></speak>'
    )
    assert [(s.text, s.pause_after_ms) for s in prepare_text(document)] == [
        ("Doctor Smith", 300),
        ("paid twelve.", 0),
    ]


def test_it_uses_xml_lang_for_say_as_and_normalization() -> None:
    document = '<speak xml:lang="zh-CN">今天是2024年1月2日。<say-as interpret-as="cardinal">42</say-as></speak>'
    assert [s.text for s in prepare_text(document)] == ["今天是二零二四年一月二日。", "四十二"]
    assert parse_ssml(document).language == "zh"


def test_it_lets_the_request_language_win_over_xml_lang() -> None:
    document = '<speak xml:lang="zh-CN"><say-as interpret-as="cardinal">42</say-as></speak>'
    assert [s.text for s in prepare_text(document, language="en")] == ["forty-two"]


def test_it_keeps_markup_text_as_given_when_normalization_is_off() -> None:
    body = 'I paid $3.50 <say-as interpret-as="ordinal">2</say-as>'
    # say-as is the author's explicit instruction: it applies in every mode.
    assert texts(body, normalization="off") == ["I paid $3.50 second"]


def test_it_marks_ssml_offsets_unknown() -> None:
    assert prepare_text("<speak>Hello.</speak>") == [Segment("Hello.", -1, -1, 1.0, 0)]


def test_it_splits_long_ssml_text_under_the_maximum() -> None:
    body = "<p>" + " ".join(["word"] * 300) + "</p>"
    segments = prepare_text(f"<speak>{body}</speak>", max_segment_chars=100)
    assert len(segments) > 10 and all(len(s.text) <= 100 for s in segments)


def test_it_returns_runs_and_pauses() -> None:
    document = parse_ssml('<speak>a<break time="20ms"/><p><prosody rate="fast">b</prosody></p></speak>')
    assert document.items == [
        Run("a"),
        Pause(20, "break"),
        Pause(0, "sentence"),
        Run("b", 1.25),
        Pause(500, "paragraph"),
    ]


# (document, line, column, words in the message)
ERRORS: list[tuple[str, int, int, str]] = [
    ("<speak>unclosed", 1, 16, "no element found"),
    ("<speak>\n<p>hi</s></speak>", 2, 8, "mismatched tag"),
    ("<speak>a &nbsp; b</speak>", 1, 10, "undefined entity"),
    ("<speak><b attr=noquotes/></speak>", 1, 16, "not well-formed"),
    ("<speak>hi</speak><extra/>", 1, 18, "junk after document element"),
    ("<speak><x:y>hi</x:y></speak>", 1, 8, "unbound prefix"),
    ("<?xml version='1.0'?>\n<html>hi</html>", 2, 1, "root element must be <speak>"),
    ("<speak>a\n  <break time='forever'/></speak>", 2, 3, "not a time"),
    ("<speak><break strength='huge'/></speak>", 1, 8, "strength"),
    ("<speak>\n\n <prosody rate='warp'>x</prosody></speak>", 3, 2, "rate"),
    ("<speak><say-as>5</say-as></speak>", 1, 8, "interpret-as"),
    ("<speak><sub>W3C</sub></speak>", 1, 8, "alias"),
    ("<speak><phoneme>x</phoneme></speak>", 1, 8, "ph attribute"),
    ("<speak><phoneme ph='a]]b'>x</phoneme></speak>", 1, 8, "[ or ]"),
    ("<!DOCTYPE speak><speak>hi</speak>", 1, 1, "DTDs"),
    ('<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY a "b">]><speak>&a;</speak>', 2, 1, "DTDs"),
]


@pytest.mark.parametrize(("document", "line", "column", "words"), ERRORS, ids=[f"{i:02d}" for i in range(len(ERRORS))])
def test_it_refuses_malformed_ssml_with_line_and_column(document: str, line: int, column: int, words: str) -> None:
    with pytest.raises(TextError) as caught:
        prepare_text(document)
    error = caught.value
    assert (error.status, error.code, error.field) == (400, "invalid_ssml", "text")
    assert f"line {line}, column {column}" in str(error)
    assert words in str(error)
