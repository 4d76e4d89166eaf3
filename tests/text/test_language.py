"""Language detection and the 422 for text a voice cannot speak."""

# The corpus is real-world text: full-width punctuation, curly quotes and IPA are the point.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from tts.text.language import check_language, detect_language, script_of
from tts.text.prepare import TextError

DETECT_CASES: list[tuple[str, list[str], str | None]] = [
    ("Hello there, how are you today?", ["en", "de"], "en"),
    ("Guten Tag, wie geht es Ihnen heute?", ["en", "de"], "de"),
    ("Bonjour, comment allez-vous aujourd'hui ?", ["en", "fr", "de"], "fr"),
    ("Hola, ¿cómo estás? Muy bien, gracias.", ["en", "es"], "es"),
    ("你好，世界", ["en", "zh"], "zh"),
    ("你好，世界", ["en"], None),
    ("Привет, как дела?", ["en", "ru"], "ru"),
    ("こんにちは世界", ["zh", "ja"], "ja"),
    ("今天天气很好", ["zh-CN", "ja"], "zh"),
    ("안녕하세요", ["en", "ko"], "ko"),
    ("The Chinese word 你好 means hello.", ["en", "zh"], "en"),
    ("<speak>Guten Tag, wie geht es Ihnen?</speak>", ["en", "de"], "de"),
    ("3.14 42 1/2", ["en", "de"], None),
    ("😀😀😀", ["en"], None),
    ("", ["en"], None),
    ("Hello", [], None),
    ("Hello there friend", ["en_US"], "en"),
]


@pytest.mark.parametrize(("text", "candidates", "expected"), DETECT_CASES)
def test_it_detects_the_language_among_candidates(text: str, candidates: list[str], expected: str | None) -> None:
    assert detect_language(text, candidates) == expected


ACCEPTED: list[tuple[str, list[str], str | None, str]] = [
    ("Hello there.", ["en"], None, "en"),
    ("Hello there.", ["en-US"], "en-GB", "en"),
    ("你好", ["en"], None, "en"),  # short: never refused
    ("The Chinese word 你好 means hello.", ["en"], None, "en"),  # mixed
    ("Guten Tag, wie geht es Ihnen heute?", ["en"], None, "en"),  # same script: pronounceable
    ("Guten Tag, wie geht es Ihnen heute?", ["en", "de"], None, "de"),
    ("你好，世界，今天天气很好", ["zh"], None, "zh"),
    ("Hello world, this is English.", ["ru"], None, "ru"),  # Latin is read by every voice
    ("😀 3.14 !!!", ["en"], None, "en"),
    ("<speak>你好</speak>", ["en"], None, "en"),
    ("Hello", [], None, "en"),
]


@pytest.mark.parametrize(("text", "voice", "requested", "expected"), ACCEPTED)
def test_it_accepts_text_the_voice_can_speak(text: str, voice: list[str], requested: str | None, expected: str) -> None:
    assert check_language(text, voice, requested) == expected


REFUSED: list[tuple[str, list[str], str | None, str]] = [
    ("你好，世界，今天天气很好", ["en"], None, "text"),
    ("我喜欢Python编程和机器学习", ["en_US"], None, "text"),
    ("Привет, как у тебя дела сегодня?", ["en"], None, "text"),
    ("こんにちは、お元気ですか", ["en", "de"], None, "text"),
    ("<speak>今天天气很好，我们去公园吧</speak>", ["en"], None, "text"),
    ("Hello", ["en"], "de", "language_code"),
    ("你好，世界，今天天气很好", ["en"], "en", "text"),
]


@pytest.mark.parametrize(("text", "voice", "requested", "field"), REFUSED)
def test_it_refuses_text_the_voice_cannot_speak(text: str, voice: list[str], requested: str | None, field: str) -> None:
    with pytest.raises(TextError) as caught:
        check_language(text, voice, requested)
    assert caught.value.status == 422
    assert caught.value.code == "unsupported_language"
    assert caught.value.field == field


def test_it_names_the_detected_language_in_the_refusal() -> None:
    with pytest.raises(TextError, match=r"zh .*Han.*speaks en"):
        check_language("今天天气很好，我们去公园散步吧", ["en"], None)


@pytest.mark.parametrize(
    ("char", "script"),
    [
        ("a", "Latin"),
        ("中", "Han"),
        ("か", "Kana"),
        ("カ", "Kana"),
        ("한", "Hangul"),
        ("я", "Cyrillic"),
        ("Ａ", "Latin"),
    ],
)
def test_it_knows_scripts(char: str, script: str) -> None:
    assert script_of(char) == script


def test_it_ignores_letters_without_a_script() -> None:
    assert script_of("ª") is None


KOKORO_LANGUAGES = ["en", "es", "fr", "hi", "it", "ja", "pt", "zh"]


@pytest.mark.parametrize(
    ("voice_language", "text", "expected"),
    [
        ("zh", "Hello there.", "en"),  # unsure among Latin languages: English, not the voice's Chinese
        ("es", "Buenos días, amigos.", "es"),
        ("ja", "Hola, ¿cómo estás? Me llamo Juan.", "es"),
        ("ja", "日本国憲法第九条", "ja"),  # every character one Japanese writes: the Japanese voice keeps it
        ("ja", "你好，这是一条测试语音。", "zh"),  # simplified Chinese
        ("en", "欢迎使用轻量级语音合成服务", "zh"),
        ("zh", "今日はいい天気ですね。", "ja"),  # kana
        ("en", "नमस्ते, आप कैसे हैं?", "hi"),
    ],
)
def test_a_multilingual_voice_reads_the_texts_language(voice_language: str, text: str, expected: str) -> None:
    assert check_language(text, [voice_language, *KOKORO_LANGUAGES], None) == expected
