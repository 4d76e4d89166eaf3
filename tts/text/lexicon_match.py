"""Pronunciation rules applied to text: compiled once per rule set, one pass, output bounded.

``CompiledRules`` turns one rule set (a dictionary version) into hash tables
keyed by string, with the lengths to try per first character: no regular
expression per rule, so a set of 5,000 rules is compiled in milliseconds and a
request matches it in time linear in its text (times the distinct lengths of
the strings that start with the character at hand).

``apply_compiled`` scans the text once, left to right. At each position the
longest string that matches wins; of equal ones the earlier set (the first
dictionary listed), then the earlier rule. The replacement is written and the
scan goes on after the matched text, so what a rule wrote is never matched
again: an alias that names another rule's string does not chain. Text inside
``[[ ... ]]`` blocks is never rewritten and no match spans one. The output's
length is counted while it is built: past ``max_chars`` it stops at once with
``ExpansionLimitExceeded`` naming the set that crossed it.

Matching is the rules' (PLS's) own: ``case_sensitive`` compares the text as
written, else both sides lower-cased character by character; with
``word_boundaries`` a string must not start or end inside a word of a script
that separates words with spaces, while Chinese and Japanese characters need
no boundary (there is none in "我在北京工作"). Plain Python: no Django.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .lexicon import LexiconError, Rule, is_unspaced
from .phonemes import phoneme_blocks
from .rewrite import Replacement, Rewritten

#: Memory of one rule in a compiled set beyond its strings: its table slot, index list and Rule
#: object. With its strings' sizes this estimates 1.0 to 1.3 times what tracemalloc measures for
#: 5,000 rules (more when rules share strings): the cache's bound errs on the safe side.
RULE_OVERHEAD_BYTES = 200


class ExpansionLimitExceeded(LexiconError):
    """The rewritten text would pass ``limit`` characters; ``set_index`` is the set whose rule crossed it."""

    def __init__(self, set_index: int, limit: int) -> None:
        super().__init__(f"the text would become longer than {limit} characters")
        self.set_index = set_index
        self.limit = limit


def fold(text: str) -> str:
    """``text`` lower-cased, one character for one (a character whose lower case is longer stays)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(low if len(low := ch.lower()) == 1 else ch for ch in text)


def _string_bytes(rule: Rule, key: str, replacement: str) -> int:
    """The memory of the distinct strings a compiled rule holds."""
    strings = {id(s): s for s in (rule.string_to_replace, key, replacement, rule.alias, rule.phoneme)}
    return sum(sys.getsizeof(s) for s in strings.values())


def _spaced_word_char(ch: str) -> bool:
    """A letter or digit of a script that separates its words with spaces (a regex ``\\w`` that is not Han or kana)."""
    return (ch.isalnum() or ch == "_") and not is_unspaced(ch)


#: One length to try: (length, whether every rule of that length needs a word end after it, folded).
_Try = tuple[int, bool, bool]


class CompiledRules:
    """One rule set ready to match; immutable, shared by every request (and thread) that uses it.

    Rules are grouped by how they compare (as written, or folded) and by where they may start
    (a whole-word rule of a spaced script only where a word starts; the others anywhere); per
    group and first character, the lengths to try, longest first, each marked when its rules
    need a word end after them, so that a length that ends inside a word is passed over
    without building its string.
    """

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = tuple(rules)
        self.replacements = tuple(r.replacement() for r in self.rules)
        # string (as written / folded) -> indices of its rules, in order
        self._tables: tuple[dict[str, list[int]], dict[str, list[int]]] = ({}, {})
        # (word starts only?) -> first character -> length -> needs a word end (all its rules)
        groups: dict[bool, dict[str, dict[tuple[int, bool], bool]]] = {False: {}, True: {}}
        size = 0
        for index, rule in enumerate(self.rules):
            folded = not rule.case_sensitive
            key = fold(rule.string_to_replace) if folded else rule.string_to_replace
            self._tables[folded].setdefault(key, []).append(index)
            bounded = rule.word_boundaries
            at_start = bounded and not is_unspaced(key[0])
            needs_end = bounded and not is_unspaced(key[-1])
            bucket = groups[at_start].setdefault(key[0], {})
            bucket[(len(key), folded)] = bucket.get((len(key), folded), True) and needs_end
            size += RULE_OVERHEAD_BYTES + _string_bytes(rule, key, self.replacements[index])
        self._anywhere = {c: _ordered(b) for c, b in groups[False].items()}
        self._word_start = {c: _ordered(b) for c, b in groups[True].items()}
        self.needs_folding = bool(self._tables[True])
        #: An estimate of the memory this set holds (the compiled-rules cache's bound counts it).
        self.size_bytes = size

    def match_at(
        self, text: str, folded: str, pos: int, start: int, end: int, word_start: bool
    ) -> tuple[int, int] | None:
        """``(length, rule index)`` of this set's best match at ``pos`` within ``text[start:end]``, or None.

        ``word_start``: no letter or digit of a spaced script right before ``pos``.
        """
        tries: list[_Try] = []
        for table in (self._anywhere, self._word_start) if word_start else (self._anywhere,):
            tries.extend(table.get(text[pos], ()))
            if self.needs_folding and folded[pos] != text[pos]:
                tries.extend(t for t in table.get(folded[pos], ()) if t[2])
        if not tries:
            return None
        if len(tries) > 1:
            tries.sort(key=lambda t: -t[0])
        best: tuple[int, int] | None = None
        for length, needs_end, by_fold in tries:
            if best is not None and length < best[0]:
                break
            stop = pos + length
            if stop > end or (needs_end and stop < end and _spaced_word_char(text[stop])):
                continue
            for index in self._tables[by_fold].get((folded if by_fold else text)[pos:stop], ()):
                if (best is None or index < best[1]) and self._bounded(self.rules[index], text, pos, stop, start, end):
                    best = (length, index)
                    break  # indices are in order: the first that fits is this key's best
        return best

    @staticmethod
    def _bounded(rule: Rule, text: str, pos: int, stop: int, start: int, end: int) -> bool:
        if not rule.word_boundaries:
            return True
        word = rule.string_to_replace
        if not is_unspaced(word[0]) and pos > start and _spaced_word_char(text[pos - 1]):
            return False
        return is_unspaced(word[-1]) or stop >= end or not _spaced_word_char(text[stop])


def _ordered(bucket: dict[tuple[int, bool], bool]) -> tuple[_Try, ...]:
    return tuple(sorted(((n, end, by_fold) for (n, by_fold), end in bucket.items()), key=lambda t: -t[0]))


def apply_compiled(text: str, sets: Sequence[CompiledRules], *, max_chars: int | None = None) -> Rewritten:
    """``text`` with the rules of ``sets`` applied in one pass (earlier sets first among equals).

    ``ExpansionLimitExceeded`` as soon as the output would pass ``max_chars``.
    """
    sets = [s for s in sets if s.rules]
    if not sets:
        return Rewritten(text)
    folded = fold(text) if any(s.needs_folding for s in sets) else text
    replacements: list[Replacement] = []
    length = len(text)
    blocks = phoneme_blocks(text)
    pieces = [(a, b) for a, b in zip([0] + [e for _, e in blocks], [s for s, _ in blocks] + [len(text)], strict=True)]
    for start, end in pieces:
        pos = start
        while pos < end:
            best: tuple[int, int, int] | None = None  # (length, set, rule)
            word_start = pos == start or not _spaced_word_char(text[pos - 1])
            for set_index, rules in enumerate(sets):
                found = rules.match_at(text, folded, pos, start, end, word_start)
                if found is not None and (best is None or found[0] > best[0]):
                    best = (found[0], set_index, found[1])
            if best is None:
                pos += 1
                continue
            matched, set_index, rule_index = best
            spoken = sets[set_index].replacements[rule_index]
            length += len(spoken) - matched
            if max_chars is not None and length > max_chars and len(spoken) > matched:
                raise ExpansionLimitExceeded(set_index, max_chars)
            replacements.append(Replacement(pos, pos + matched, spoken))
            pos += matched
    return Rewritten(text, replacements)


def apply_rules(text: str, rules: Sequence[Rule]) -> str:
    """``text`` with ``rules`` applied in one pass, unbounded (one set, compiled for this call)."""
    return apply_compiled(text, [CompiledRules(rules)]).text
