"""Piper's inline phoneme blocks: ``[[ h ə l oʊ ]]`` inside text.

Piper's phonemizer passes such blocks through as raw phonemes (SSML
``<phoneme>`` produces them too). They are opaque to normalization and
segmentation. Piper finds them with ``\\[\\[.*?\\]\\]``; the same blocks are
found here with a linear scan, because that regex is quadratic on a hostile
"[[[[[[..." and request text can be long.
"""

from __future__ import annotations


def phoneme_blocks(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every ``[[ ... ]]`` block, as Piper would find them
    (shortest match, never across a line break)."""
    blocks: list[tuple[int, int]] = []
    pos = 0
    close = -1
    while True:
        start = text.find("[[", pos)
        if start < 0:
            return blocks
        if close < start + 2:
            close = text.find("]]", start + 2)
            if close < 0:
                return blocks  # no closing bracket after here: no more blocks
        newline = text.find("\n", start, close)
        if newline >= 0:
            pos = newline + 1
            continue
        blocks.append((start, close + 2))
        pos = close + 2


def mask_phonemes(text: str) -> str:
    """Same-length text where phoneme blocks hold no punctuation, so no
    boundary is ever found inside an IPA string like "hɛ.loʊ"."""
    blocks = phoneme_blocks(text)
    if not blocks:
        return text
    parts = []
    pos = 0
    for start, end in blocks:
        parts.append(text[pos:start])
        parts.append("x" * (end - start))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)
