"""Pronunciation lexicons: alias and phoneme rules, PLS in and out, applied to text.

The rules have ElevenLabs' shape: ``{"type": "alias", "string_to_replace",
"alias"}`` or ``{"type": "phoneme", "string_to_replace", "phoneme",
"alphabet"}``, each with ``case_sensitive`` and ``word_boundaries`` (both true
by default, as in PLS: a grapheme matches whole tokens, with its case).

Alias rules rewrite the text before normalization; phoneme rules replace the
word with a Piper ``[[ phonemes ]]`` block (IPA as the voice's phonemizer
writes it), which normalization, segmentation and the phonemizer pass through.
Text already inside a phoneme block is never rewritten. Plain Python: no Django.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from xml.etree.ElementTree import Element, SubElement, tostring

from defusedxml import ElementTree as SafeET

from .phonemes import phoneme_blocks

PLS_NS = "http://www.w3.org/2005/01/pronunciation-lexicon"
#: Alphabets a phoneme rule may use: this platform speaks IPA (espeak's, as Piper writes it).
ALPHABETS = ("ipa",)


class LexiconError(ValueError):
    """A rule or PLS document that cannot be used; the message says why."""


@dataclass(frozen=True)
class Rule:
    type: str  # "alias" or "phoneme"
    string_to_replace: str
    alias: str = ""
    phoneme: str = ""
    alphabet: str = "ipa"
    case_sensitive: bool = True
    word_boundaries: bool = True

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Rule:
        kind = str(data.get("type") or ("phoneme" if data.get("phoneme") else "alias"))
        target = str(data.get("string_to_replace") or "").strip()
        if not target:
            raise LexiconError("a rule needs a non-empty string_to_replace")
        if kind == "alias":
            alias = str(data.get("alias") or "")
            if not alias.strip():
                raise LexiconError(f"alias rule for '{target}' needs an alias")
            case, words = _flags(data)
            return cls("alias", target, alias=alias, case_sensitive=case, word_boundaries=words)
        if kind == "phoneme":
            phoneme = str(data.get("phoneme") or "").strip()
            alphabet = str(data.get("alphabet") or "ipa").lower()
            if not phoneme or "[[" in phoneme or "]]" in phoneme or "\n" in phoneme:
                raise LexiconError(f"phoneme rule for '{target}' needs a phoneme string (IPA)")
            if alphabet not in ALPHABETS:
                raise LexiconError(f"phoneme rule for '{target}': alphabet '{alphabet}' is not supported (use ipa)")
            case, words = _flags(data)
            return cls(
                "phoneme", target, phoneme=phoneme, alphabet=alphabet, case_sensitive=case, word_boundaries=words
            )
        raise LexiconError(f"unknown rule type '{kind}' (alias or phoneme)")

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"type": self.type, "string_to_replace": self.string_to_replace}
        if self.type == "alias":
            out["alias"] = self.alias
        else:
            out["phoneme"] = self.phoneme
            out["alphabet"] = self.alphabet
        out["case_sensitive"] = self.case_sensitive
        out["word_boundaries"] = self.word_boundaries
        return out

    def pattern(self) -> re.Pattern[str]:
        body = re.escape(self.string_to_replace)
        if self.word_boundaries:
            # Chinese and Japanese write no spaces: a word of theirs is bounded by nothing ("北京" in
            # "我在北京工作"), so a side that is such a character needs no boundary, and a Latin word
            # ends where such a character begins ("AI" in "AI改变世界").
            word = self.string_to_replace
            before = "" if word and _unspaced(word[0]) else rf"(?<!{_SPACED_WORD_CHAR})"
            after = "" if word and _unspaced(word[-1]) else rf"(?!{_SPACED_WORD_CHAR})"
            body = rf"{before}{body}{after}"
        return re.compile(body, 0 if self.case_sensitive else re.IGNORECASE)

    def replacement(self) -> str:
        return self.alias if self.type == "alias" else f"[[{self.phoneme}]]"


_UNSPACED = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"
#: A letter or digit of a script that separates its words with spaces.
_SPACED_WORD_CHAR = rf"[^\W{_UNSPACED}]"


def _unspaced(char: str) -> bool:
    """A character of a script written without spaces between words (Han, kana)."""
    return "\u3040" <= char <= "\u30ff" or "\u3400" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"


def _flags(data: dict[str, object]) -> tuple[bool, bool]:
    """``case_sensitive`` and ``word_boundaries``: true unless given false (PLS matching)."""

    def flag(name: str) -> bool:
        value = data.get(name)
        return True if value is None else bool(value)

    return flag("case_sensitive"), flag("word_boundaries")


def rules_from_json(items: Iterable[dict[str, object]]) -> list[Rule]:
    return [Rule.from_json(item) for item in items]


def _outside_blocks(text: str, rule: Rule) -> str:
    """``text`` with ``rule`` applied everywhere except inside ``[[ ... ]]`` blocks."""
    pattern, replacement = rule.pattern(), rule.replacement()
    out = []
    pos = 0
    for start, end in phoneme_blocks(text):
        out.append(pattern.sub(lambda _m: replacement, text[pos:start]))
        out.append(text[start:end])
        pos = end
    out.append(pattern.sub(lambda _m: replacement, text[pos:]))
    return "".join(out)


def apply_rules(text: str, rules: Sequence[Rule]) -> str:
    """Alias rules first (they change the words), then phoneme rules; each in order."""
    for rule in [r for r in rules if r.type == "alias"] + [r for r in rules if r.type == "phoneme"]:
        text = _outside_blocks(text, rule)
    return text


def parse_pls(data: bytes | str) -> list[Rule]:
    """The rules of a PLS document: one per grapheme of each lexeme (alias if it has one, else its phoneme)."""
    try:
        root = SafeET.fromstring(data)
    except Exception as exc:  # defusedxml and expat raise several types
        raise LexiconError(f"not a valid PLS document: {exc}") from exc
    if _local(root.tag) != "lexicon":
        raise LexiconError("not a PLS document: the root element must be <lexicon>")
    alphabet = (root.get("alphabet") or "ipa").lower()
    rules: list[Rule] = []
    for lexeme in root:
        if _local(lexeme.tag) != "lexeme":
            continue
        graphemes = [(el.text or "").strip() for el in lexeme if _local(el.tag) == "grapheme"]
        aliases = [(el.text or "") for el in lexeme if _local(el.tag) == "alias"]
        phonemes = [el for el in lexeme if _local(el.tag) == "phoneme"]
        for grapheme in filter(None, graphemes):
            if aliases:
                rules.append(Rule.from_json({"type": "alias", "string_to_replace": grapheme, "alias": aliases[0]}))
            elif phonemes:
                own = (phonemes[0].get("alphabet") or alphabet).lower()
                rules.append(
                    Rule.from_json(
                        {
                            "type": "phoneme",
                            "string_to_replace": grapheme,
                            "phoneme": phonemes[0].text or "",
                            "alphabet": own,
                        }
                    )
                )
    if not rules:
        raise LexiconError("the PLS document has no lexeme with a grapheme and an alias or phoneme")
    return rules


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def to_pls(rules: Sequence[Rule], *, lang: str = "en-US") -> bytes:
    """A PLS 1.0 document holding ``rules``."""
    root = Element("lexicon", {"version": "1.0", "xmlns": PLS_NS, "alphabet": "ipa", "xml:lang": lang})
    for rule in rules:
        lexeme = SubElement(root, "lexeme")
        SubElement(lexeme, "grapheme").text = rule.string_to_replace
        if rule.type == "alias":
            SubElement(lexeme, "alias").text = rule.alias
        else:
            SubElement(lexeme, "phoneme").text = rule.phoneme
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + tostring(root, encoding="unicode").encode()
