"""When text that arrives in pieces is spoken: the chunk schedule and sentence cuts.

The utterance driver's buffer (``tts.synthesis.live.driver``), the same
for every streaming protocol: ElevenLabs' stream-input and multi-context
WebSockets (their ``chunk_length_schedule`` and ``auto_mode``) and Wyoming's
``synthesize-chunk`` (every complete sentence as soon as it ends). Pure text
rules: no I/O, testable without a socket.
"""

from __future__ import annotations

import re
from collections.abc import Callable

DEFAULT_CHUNK_SCHEDULE = (120, 160, 250, 290)  # ElevenLabs' default
#: A buffer this long with no word boundary is spoken anyway.
_RUNAWAY_CHARS = 2000

# Latin ends need a space after them ("3.5" and "e.g." are not ends); Japanese and Chinese
# ones (the ideographic full stop, full-width ! ? ;) end a sentence wherever they stand: such
# text has no spaces. So do ASCII . ! ? ; between Chinese or Japanese characters, as in
# tts.text.sentences.
_CJK = "\u3040-\u30ff\u3400-\u9fff"
_CJK_CLOSERS = "\u300d\u300f\uff09\u3011\u300b\"'\u201d\u2019)\\]"
_SENTENCE_END = re.compile(
    r"[.!?;:][\"'\u201d\u2019)\]]*\s+"
    rf"|[\u3002\uff01\uff1f\uff1b\uff61][{_CJK_CLOSERS}]*"
    rf"|(?<=[{_CJK}])[.!?;]+(?=[{_CJK_CLOSERS}]*[{_CJK}])[{_CJK_CLOSERS}]*"
)
# Home Assistant's rule (sentence-stream, what wyoming-piper cuts a Wyoming stream with): a Latin
# end (. ! ? …, Arabic ؟, Devanagari । ॥) ends a sentence only before a space and a capital
# letter, a letter without case (Chinese, Japanese, Arabic) or a numbered item ("2. "); ; and :
# never do. "pp. 3", "v2.1 beta" and a trailing nonce ("… afternoon. 1f3a9c0e") stay in their
# sentence. Chinese and Japanese ends stand alone. One difference: an end with nothing after
# its space yet is an end (the sentence is spoken now, not when the next word comes).
# The lookbehind starts a run of marks only once (as tts/text/sentences.py's _LATIN_END): without
# it a run not followed by a space is tried again from each of its marks, and 20,000 dots in one
# message held the event loop 7 s.
_STRICT_LATIN_END = re.compile(
    r"(?<![.!?\u2026\u061f\u0964\u0965])[.!?\u2026\u061f\u0964\u0965]+[\"'\u201d\u2019)\]}\u00bb]*\s+(?=(\S)(\S*)|$)"
)
_STRICT_CJK_END = re.compile(rf"[\u3002\uff01\uff1f]+[{_CJK_CLOSERS}]*|\u2026\u2026[{_CJK_CLOSERS}]*")
_LIST_ITEM = re.compile(r"\d+[.)]")
# "Dr. Smith", "U.S. Army": a capital and at most two more letters before a full stop end nothing.
_ABBREVIATION = re.compile(r"(?<![^\W\d_])[^\W\d_]{1,3}\.$")
# A message that ends a sentence with no space after it ("... with that."): pipecat sends each
# sentence so. Not after a digit ("3." may go on "5"), a capitalized word of at most three letters
# ("Dr.", and so "Yes." too) or initials ("U.S.").
_MESSAGE_SENTENCE_END = re.compile(r"[^\W\d_][.!?\u2026]+[\"'\u201d\u2019)\]]*$")
_TITLE = re.compile(r"(?<![^\W\d_])(?:[A-Z][a-z]{0,2}|(?:[A-Za-z]\.)+[A-Za-z])\.$")


def _starts_a_sentence(first: str, word: str) -> bool:
    return (
        first.isupper()
        or first.istitle()
        or (first.isalpha() and first.lower() == first.upper())
        or bool(_LIST_ITEM.match(word))
    )


def strict_sentence_ends(text: str, start: int) -> list[int]:
    """Where sentences end in ``text`` (from ``start``) by Home Assistant's rule (above)."""
    ends = [m.end() for m in _STRICT_CJK_END.finditer(text, start)]
    for m in _STRICT_LATIN_END.finditer(text, start):
        abbreviation = _ABBREVIATION.search(text, max(0, m.start() - 4), m.start() + 1)
        if abbreviation is not None and abbreviation[0][0].isupper():
            continue
        if m[1] is None or _starts_a_sentence(m[1], m[1] + m[2]):
            ends.append(m.end())
    return sorted(ends)


def loose_sentence_ends(text: str, start: int) -> list[int]:
    """Where sentences end in ``text`` (from ``start``): ``_SENTENCE_END``, ElevenLabs' WebSockets."""
    return [m.end() for m in _SENTENCE_END.finditer(text, start)]


# Where a buffer without spaces may be cut when no sentence has ended: after a clause mark
# (the ideographic comma, full-width comma and colon, the ellipsis).
_CLAUSE_BREAKS = (" ", "\n", "\u3001", "\uff0c", "\uff1a", "\u2026")
#: How far back a search of new text starts: a sentence end (its closing quotes and the
#: space after them) may straddle two messages.
_END_OVERLAP = 16


class TextBuffer:
    """Holds text until there is enough to speak well, like ElevenLabs' chunk schedule.

    The n-th generation starts once ``schedule[n]`` characters (the last value
    repeats) are buffered, cut at the last sentence end in the buffer, else at
    the last word boundary (for Chinese and Japanese, which have no spaces,
    the last clause mark: ideographic comma, full-width comma or colon,
    ellipsis), so no word is split. ``auto_mode`` speaks each
    complete sentence as soon as it ends instead; with ``message_ends`` (the default with
    ElevenLabs' rules, ``loose_sentence_ends``) a message that ends with a sentence mark ends
    its sentence too, space or not: ElevenLabs' ``auto_mode`` speaks each message as it comes,
    and pipecat sends whole sentences without a trailing space ("... with that." then "Your
    table ..."), which otherwise waited for the turn's flush. ``flush`` hands out the rest.
    ``sentence_ends``: where sentences end (``loose_sentence_ends``: ; and : too,
    what ElevenLabs' WebSockets cut at; Wyoming's, ``strict_sentence_ends``).
    """

    def __init__(
        self,
        schedule: tuple[int, ...] = DEFAULT_CHUNK_SCHEDULE,
        *,
        auto_mode: bool = False,
        sentence_ends: Callable[[str, int], list[int]] = loose_sentence_ends,
        message_ends: bool | None = None,
    ) -> None:
        self.schedule = schedule
        self.auto_mode = auto_mode
        self.sentence_ends = sentence_ends
        self.message_ends = (sentence_ends is loose_sentence_ends) if message_ends is None else message_ends
        self.generations = 0
        self._text = ""
        #: End of the last sentence in the buffer (0: none), and how far the buffer was searched.
        self._sentence_end = 0
        self._scanned = 0

    @property
    def pending(self) -> str:
        return self._text

    def add(self, text: str) -> list[str]:
        """Buffer ``text``; the pieces that are ready to be spoken now, in order.

        Costs time in proportion to ``text``, not to the buffer: only the new text
        (and the few characters a sentence end may straddle) is searched, and
        whitespace never piles up (keep-alive ``" "`` messages add nothing to a
        buffer that is empty or already ends in a space).
        """
        if not text.strip() and (not self._text or self._text[-1].isspace()):
            return []
        self._text += text
        start = max(0, self._scanned - _END_OVERLAP)
        for end in self.sentence_ends(self._text, start):
            self._sentence_end = max(self._sentence_end, end)
        if self.auto_mode and self.message_ends and _MESSAGE_SENTENCE_END.search(text) and not _TITLE.search(text):
            self._sentence_end = len(self._text)
        self._scanned = len(self._text)
        pieces = []
        while piece := self._take():
            pieces.append(piece)
        return pieces

    def flush(self) -> str:
        piece, self._text = self._text, ""
        self._sentence_end = self._scanned = 0
        if piece.strip():
            self.generations += 1
        return piece

    def _take(self) -> str:
        text = self._text
        sentence_end = self._sentence_end
        if self.auto_mode:
            cut = sentence_end
        else:
            threshold = self.schedule[min(self.generations, len(self.schedule) - 1)]
            if len(text) < threshold:
                return ""
            cut = sentence_end or max(text.rfind(mark) for mark in _CLAUSE_BREAKS) + 1
            if cut <= 0 and len(text) >= _RUNAWAY_CHARS:
                cut = len(text)
        if cut <= 0 or not text[:cut].strip():
            return ""
        self._text = text[cut:]
        self._sentence_end = max(0, self._sentence_end - cut)
        self._scanned = len(self._text)
        self.generations += 1
        return text[:cut]
