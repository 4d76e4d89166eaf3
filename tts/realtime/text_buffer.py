"""When text that arrives in pieces is spoken: the chunk schedule and sentence cuts.

The utterance driver's buffer (``tts.realtime.driver``), the same
for every streaming protocol: ElevenLabs' stream-input and multi-context
WebSockets (their ``chunk_length_schedule`` and ``auto_mode``) and Wyoming's
``synthesize-chunk`` (every complete sentence as soon as it ends). Pure text
rules: no I/O, testable without a socket.
"""

from __future__ import annotations

import re

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
    complete sentence as soon as it ends instead. ``flush`` hands out the rest.
    """

    def __init__(self, schedule: tuple[int, ...] = DEFAULT_CHUNK_SCHEDULE, *, auto_mode: bool = False) -> None:
        self.schedule = schedule
        self.auto_mode = auto_mode
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
        for match in _SENTENCE_END.finditer(self._text, start):
            self._sentence_end = max(self._sentence_end, match.end())
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
