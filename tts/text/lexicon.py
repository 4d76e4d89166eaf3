"""Pronunciation lexicons: alias and phoneme rules, their length limits, PLS in and out.

The rules have ElevenLabs' shape: ``{"type": "alias", "string_to_replace",
"alias"}`` or ``{"type": "phoneme", "string_to_replace", "phoneme",
"alphabet"}``, each with ``case_sensitive`` and ``word_boundaries`` (both true
by default, as in PLS: a grapheme matches whole tokens, with its case).

Alias rules rewrite the text before normalization; phoneme rules replace the
word with a Piper ``[[ phonemes ]]`` block (IPA as the voice's phonemizer
writes it), which normalization, segmentation and the phonemizer pass through.
Text already inside a phoneme block is never rewritten. Applying rules to text is
``tts.text.lexicon_match`` (one pass, bounded). Plain Python: no Django.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from xml.etree.ElementTree import Element, SubElement, tostring

from defusedxml import ElementTree as SafeET

PLS_NS = "http://www.w3.org/2005/01/pronunciation-lexicon"
#: Alphabets a phoneme rule may use: this platform speaks IPA (espeak's, as Piper writes it).
ALPHABETS = ("ipa",)


class LexiconError(ValueError):
    """A rule or PLS document that cannot be used; the message says why.

    ``part``: the rule's field at fault (``alias``, ``phoneme``, ...), when there is one.
    """

    def __init__(self, message: str, *, part: str | None = None) -> None:
        super().__init__(message)
        self.part = part


@dataclass(frozen=True)
class RuleLimits:
    """The longest strings a rule may hold and the most rules a set may hold (``None``: unbounded).

    The services pass their settings (``TTS_DICTIONARY_MAX_*``) for what a tenant writes; rules
    already stored are read without them.
    """

    string_chars: int | None = None
    alias_chars: int | None = None
    phoneme_chars: int | None = None
    rules: int | None = None


UNBOUNDED = RuleLimits()


def _check_length(target: str, part: str, value: str, limit: int | None) -> None:
    if limit is not None and len(value) > limit:
        shown = target if len(target) <= 40 else target[:40] + "..."
        raise LexiconError(
            f"{part} of the rule for '{shown}' is {len(value)} characters long; at most {limit}", part=part
        )


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
    def from_json(cls, data: dict[str, object], limits: RuleLimits = UNBOUNDED) -> Rule:
        kind = str(data.get("type") or ("phoneme" if data.get("phoneme") else "alias"))
        target = str(data.get("string_to_replace") or "").strip()
        if not target:
            raise LexiconError("a rule needs a non-empty string_to_replace", part="string_to_replace")
        _check_length(target, "string_to_replace", target, limits.string_chars)
        if kind == "alias":
            alias = str(data.get("alias") or "")
            if not alias.strip():
                raise LexiconError(f"alias rule for '{target}' needs an alias", part="alias")
            _check_length(target, "alias", alias, limits.alias_chars)
            case, words = _flags(data)
            return cls("alias", target, alias=alias, case_sensitive=case, word_boundaries=words)
        if kind == "phoneme":
            phoneme = str(data.get("phoneme") or "").strip()
            alphabet = str(data.get("alphabet") or "ipa").lower()
            if not phoneme or "[[" in phoneme or "]]" in phoneme or "\n" in phoneme:
                raise LexiconError(f"phoneme rule for '{target}' needs a phoneme string (IPA)", part="phoneme")
            _check_length(target, "phoneme", phoneme, limits.phoneme_chars)
            if alphabet not in ALPHABETS:
                raise LexiconError(
                    f"phoneme rule for '{target}': alphabet '{alphabet}' is not supported (use ipa)", part="alphabet"
                )
            case, words = _flags(data)
            return cls(
                "phoneme", target, phoneme=phoneme, alphabet=alphabet, case_sensitive=case, word_boundaries=words
            )
        raise LexiconError(f"unknown rule type '{kind}' (alias or phoneme)", part="type")

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

    def replacement(self) -> str:
        return self.alias if self.type == "alias" else f"[[{self.phoneme}]]"


def is_unspaced(char: str) -> bool:
    """A character of a script written without spaces between words (Han, kana)."""
    return "\u3040" <= char <= "\u30ff" or "\u3400" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"


def _flags(data: dict[str, object]) -> tuple[bool, bool]:
    """``case_sensitive`` and ``word_boundaries``: true unless given false (PLS matching)."""

    def flag(name: str) -> bool:
        value = data.get(name)
        return True if value is None else bool(value)

    return flag("case_sensitive"), flag("word_boundaries")


def rules_from_json(items: Iterable[dict[str, object]], limits: RuleLimits = UNBOUNDED) -> list[Rule]:
    return [Rule.from_json(item, limits) for item in items]


def parse_pls(data: bytes | str, limits: RuleLimits = UNBOUNDED) -> list[Rule]:
    """The rules of a PLS document: one per grapheme of each lexeme (alias if it has one, else its phoneme).

    ``LexiconError`` naming the lexeme (1-based) when one breaks ``limits``, or as soon as the
    document holds more rules than ``limits.rules``.
    """
    try:
        root = SafeET.fromstring(data)
    except Exception as exc:  # defusedxml and expat raise several types
        raise LexiconError(f"not a valid PLS document: {exc}") from exc
    if _local(root.tag) != "lexicon":
        raise LexiconError("not a PLS document: the root element must be <lexicon>")
    alphabet = (root.get("alphabet") or "ipa").lower()
    rules: list[Rule] = []
    lexemes = (el for el in root if _local(el.tag) == "lexeme")
    for number, lexeme in enumerate(lexemes, start=1):
        graphemes = [(el.text or "").strip() for el in lexeme if _local(el.tag) == "grapheme"]
        aliases = [(el.text or "") for el in lexeme if _local(el.tag) == "alias"]
        phonemes = [el for el in lexeme if _local(el.tag) == "phoneme"]
        for grapheme in filter(None, graphemes):
            rule: dict[str, object] = {"string_to_replace": grapheme}
            if aliases:
                rule.update(type="alias", alias=aliases[0])
            elif phonemes:
                own = (phonemes[0].get("alphabet") or alphabet).lower()
                rule.update(type="phoneme", phoneme=phonemes[0].text or "", alphabet=own)
            else:
                continue
            try:
                rules.append(Rule.from_json(rule, limits))
            except LexiconError as exc:
                raise LexiconError(f"lexeme {number}: {exc}", part=exc.part) from exc
            if limits.rules is not None and len(rules) > limits.rules:
                raise LexiconError(f"the PLS document holds more than {limits.rules} rules", part="rules")
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
