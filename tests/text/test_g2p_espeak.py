"""The espeak-ng front ends (en, es, fr, hi, it, pt): Kokoro's phonemes, misaki's symbols, word spans."""

# IPA is the point: look-alike letters are deliberate.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from tts.text.g2p import FRONT_ENDS, g2p_for
from tts.text.g2p.espeak import KOKORO_VOCAB

SENTENCES = {
    "en": "The judge chose a house.",
    "es": "Hola, ¿cómo estás?",
    "fr": "Bonjour, les amis!",
    "hi": "नमस्ते, आप कैसे हैं?",
    "it": "Ciao, come stai?",
    "pt": "Olá, tudo bem?",
}


@pytest.mark.parametrize("language", sorted(SENTENCES))
def test_every_word_is_read_in_kokoros_vocabulary_and_placed_on_its_characters(language: str) -> None:
    text = SENTENCES[language]
    result = g2p_for(language).phonemize(text)
    assert result.phonemes and set(result.phonemes) <= KOKORO_VOCAB
    spoken = [w for w in text.replace(",", " ").replace("?", " ").replace("!", " ").replace(".", " ").split() if w]
    spoken = [w.strip("¿¡") for w in spoken]
    assert [text[w.char_start : w.char_end] for w in result.words] == spoken
    assert all(result.phonemes[w.start : w.end].strip() for w in result.words)


def test_the_registry_knows_every_language_kokoro_speaks_but_chinese_which_is_its_own() -> None:
    assert {"en", "es", "fr", "hi", "it", "ja", "pt"} <= set(FRONT_ENDS)


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        # misaki's symbols for diphthongs and affricates (espeak-ng's tied phonemes), as Kokoro learnt them
        ("en", "I buy a house.", "I bˈI ə hˈWs."),
        ("en", "The judge chose.", "ðə ʤˈʌʤ ʧˈOz."),
        ("en", "butter", "bˈʌTəɹ"),  # the American flap
        ("it", "Ciao.", "ʧˈao."),
        ("es", "¿Cómo estás?", "kˈomo estˈas?"),
        ("fr", "les amis", "lez amˈi"),  # liaison kept: clauses are read whole, espeak's "-" dropped
        ("pt", "pão", "pˈɐ̃ʊ̃"),
        # Nasal vowels espeak-ng writes composed (ĩ, ũ, ã) keep their tilde, decomposed as misaki
        # writes them; they were dropped whole ("vinte e cinco" was heard as "venti e senku", #35).
        ("pt", "vinte e cinco", "vˈi\u0303nʧj i sˈi\u0303ŋkʊ"),
        ("pt", "um", "ˈu\u0303m"),
    ],
)
def test_it_reads_as_kokoro_was_trained(language: str, text: str, expected: str) -> None:
    assert g2p_for(language).phonemize(text).phonemes == expected


def test_a_number_is_one_word_on_its_digits_however_many_words_it_becomes() -> None:
    text = "Tengo 1234 años."
    result = g2p_for("es").phonemize(text)
    assert [text[w.char_start : w.char_end] for w in result.words] == ["Tengo", "1234", "años"]
    number = result.words[1]
    assert " " in result.phonemes[number.start : number.end]  # mil doscientos treinta y cuatro


def test_blank_text_reads_as_nothing() -> None:
    assert g2p_for("fr").phonemize("  ").phonemes == ""


def test_the_front_ends_are_shared_between_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    def read(i: int) -> str:
        language = ("es", "it", "en")[i % 3]
        return g2p_for(language).phonemize(SENTENCES[language]).phonemes

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(read, range(30)))
    for i, phonemes in enumerate(results):
        language = ("es", "it", "en")[i % 3]
        assert phonemes == g2p_for(language).phonemize(SENTENCES[language]).phonemes
