"""Piper's inline phoneme blocks (``[[ h ə l oʊ ]]``, and SSML ``<phoneme>``) for Kokoro: spoken as phonemes.

Kokoro's front ends read text. Handed a block, they read its IPA symbols aloud by name: the stress mark is
"accento primario" in Italian and ``ʊ`` "lettera due otto a", so 17 characters of phonemes made
8 s of audio, ten times the billed text's worth (``tests/limits/test_engine_cost_rule.py``,
#32 item 2). Kokoro's alphabet is IPA (misaki's symbols), so a block's phonemes go to the model as
they are, each word of the block one word, the symbols its vocabulary lacks dropped; the text
around the blocks goes through the language's front end as before.
"""

from __future__ import annotations

from collections.abc import Container

from tts.text.g2p import G2P, PhonemeWord
from tts.text.g2p.base import PhonemizedText
from tts.text.phonemes import phoneme_blocks


def phonemize_with_blocks(front_end: G2P, text: str, vocab: Container[str]) -> PhonemizedText:
    """``text`` read by ``front_end``, its phoneme blocks taken as Kokoro phonemes (word spans kept)."""
    blocks = phoneme_blocks(text)
    if not blocks:
        return front_end.phonemize(text)
    phonemes: list[str] = []
    words: list[PhonemeWord] = []
    length = 0

    def add(piece: PhonemizedText, offset: int) -> None:
        nonlocal length
        if not piece.phonemes.strip():
            return
        if length:
            phonemes.append(" ")
            length += 1
        for word in piece.words:
            placed = word.char_start >= 0
            words.append(
                PhonemeWord(
                    word.start + length,
                    word.end + length,
                    word.char_start + offset if placed else -1,
                    word.char_end + offset if placed else -1,
                )
            )
        phonemes.append(piece.phonemes)
        length += len(piece.phonemes)

    pos = 0
    for start, end in blocks:
        if text[pos:start].strip():
            add(front_end.phonemize(text[pos:start]), pos)
        kept = ["".join(ch for ch in word if ch in vocab) for word in text[start + 2 : end - 2].split()]
        ipa = " ".join(word for word in kept if word)
        if ipa:
            add(PhonemizedText(ipa, [PhonemeWord(0, len(ipa), start, end)]), 0)
        pos = end
    if text[pos:].strip():
        add(front_end.phonemize(text[pos:]), pos)
    return PhonemizedText("".join(phonemes), words)
