"""What a downloaded file is called: one rule for every page that offers audio (history, jobs,
the playground, the admin) and the ``Content-Disposition`` header that carries the name.

A name says whose voice, when and what: ``joe_2026-05-01_143210_the-ferry-left-the-harbour.mp3``.
The first words keep any script (``nezumi_2026-12-02_124507_今日は良い天気です.wav``) and are
made safe for every filesystem (no separators, reserved or control characters). The header gives
the name twice, as RFC 6266 advises: ``filename*`` in UTF-8 (RFC 5987) for browsers, which all
read it, and an ASCII ``filename`` for any client that does not.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from typing import Protocol
from urllib.parse import quote

#: Whitespace-separated words of the text a name keeps.
NAME_WORDS = 6
#: The width of those words in a name (a CJK character counts as two): a readable length.
NAME_WORDS_WIDTH = 48
VOICE_WIDTH = 32


def _width(char: str) -> int:
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _cut(text: str, width: int) -> str:
    """``text`` cut to ``width`` columns, at a word break when there is one in the second half."""
    out: list[str] = []
    used = 0
    for char in text:
        used += _width(char)
        if used > width:
            kept = "".join(out)
            at = kept.rfind("-")
            return kept[:at] if at > len(kept) // 2 else kept
        out.append(char)
    return text


def _keeps(char: str) -> bool:
    # Letters, marks (Devanagari's vowel signs, accents) and digits of any script; the rest breaks words.
    return unicodedata.category(char)[0] in "LMN"


def name_part(text: str, width: int) -> str:
    """Words of ``text`` (any script) joined by ``-``, lower-cased, safe in a file name."""
    normal = unicodedata.normalize("NFKC", text).casefold()
    spaced = "".join(char if _keeps(char) else " " for char in normal)
    return _cut("-".join(spaced.split()), width).strip("-")


def download_filename(voice: str, created_at: dt.datetime, text: str, extension: str) -> str:
    """``<voice>_<UTC date>_<UTC time>_<first words>.<extension>``; no words when there is no text."""
    words = name_part(" ".join(text[:1000].split()[:NAME_WORDS]), NAME_WORDS_WIDTH)  # a job's text may be a book
    stamp = created_at.astimezone(dt.UTC).strftime("%Y-%m-%d_%H%M%S")
    parts = [name_part(voice, VOICE_WIDTH) or "voice", stamp, *([words] if words else [])]
    return f"{'_'.join(parts)}.{extension.strip('.')}"


def ascii_filename(name: str) -> str:
    """The ASCII fallback of a name: accents dropped, other scripts' words left out."""
    stem, dot, extension = name.rpartition(".")
    if not dot:
        stem, extension = name, ""
    plain = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    plain = re.sub(r"[^A-Za-z0-9._-]+", "-", plain)
    plain = re.sub(r"-{2,}", "-", plain)
    plain = re.sub(r"[-_]*_[-_]*", "_", plain).strip("-_") or "audio"
    return f"{plain}.{extension}" if extension else plain


def content_disposition(name: str, *, inline: bool = False) -> str:
    """The header value for ``name``: ASCII ``filename`` and, when the name is not ASCII, ``filename*``."""
    kind = "inline" if inline else "attachment"
    fallback = ascii_filename(name)
    if fallback == name:
        return f'{kind}; filename="{name}"'
    return f"{kind}; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


class _Spoken(Protocol):
    voice_id: str
    voice_name: str
    text: str
    created_at: dt.datetime


def filename_for(item: _Spoken, extension: str) -> str:
    """The download name of a history item or a job (its voice's name, else its id)."""
    return download_filename(item.voice_name or item.voice_id, item.created_at, item.text or "", extension)
