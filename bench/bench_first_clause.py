"""Kokoro's first clause first (#35 item 5): a two-clause Chinese sentence's first audio on a stream,
against the time its whole file takes.

A benchmark, not a test. It starts the platform twice (daphne, SQLite, the demo
setup with Kokoro's voices, the audio cache off): once as shipped, once with
``TTS_FIRST_CLAUSE_MIN_CHARS=0`` (no cut, as before). On each, alternating
per round, every sentence is asked for as a whole file
(``POST /v1/text-to-speech/{voice}``: its total time) and as a stream
(``.../stream``: the time to its first audio byte and to its end). It prints
the median first audio as a fraction of the whole file's time (target
<= 0.45 with the cut) and the stream's total against the whole file's.

    .venv/bin/python bench/bench_first_clause.py [--rounds 5] [--voice zf_xiaoxiao]

The intelligibility side is ``bench_intelligibility.py --languages zh --route stream``
against ``--route whole``.
"""

# Chinese text: full-width punctuation is the point.
# ruff: noqa: RUF001

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_streaming import start_platform

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "bench" / "texts.json"
# zh_short from ../shared/bench/texts.json first, then two-clause sentences of everyday Chinese.
EXTRA = [
    "如果明天不下雨，我们就去爬山。",
    "会议定在下午三点，请大家提前十分钟到场。",
    "这家餐厅的菜很好吃，价格也不贵。",
]


def sentences() -> list[str]:
    texts = json.loads(SHARED.read_text(encoding="utf-8"))
    return [texts["zh_short"], *EXTRA]


GAPS: dict[tuple[str, str], float] = {}


def longest_gap(pcm: bytes, rate: int = 24000, frame_ms: int = 10) -> float:
    """Seconds of the longest quiet stretch inside the audio (not at its ends), -40 dB below its loudest frame."""
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768
    frame = rate * frame_ms // 1000
    rms = np.sqrt(np.mean(samples[: len(samples) // frame * frame].reshape(-1, frame) ** 2, axis=1))
    loud = np.flatnonzero(rms > rms.max() * 0.01)
    return float(np.max(np.diff(loud)) - 1) * frame_ms / 1000 if len(loud) > 1 else 0.0


def whole(client: httpx.Client, url: str, key: str, voice: str, text: str, label: str = "") -> float:
    started = time.perf_counter()
    response = client.post(
        f"{url}/v1/text-to-speech/{voice}?output_format=pcm_24000", json={"text": text}, headers={"xi-api-key": key}
    )
    response.raise_for_status()
    elapsed = time.perf_counter() - started
    GAPS[(label + " whole", text)] = longest_gap(response.content)
    return elapsed


def stream(client: httpx.Client, url: str, key: str, voice: str, text: str, label: str = "") -> tuple[float, float]:
    started = time.perf_counter()
    first = None
    audio = bytearray()
    with client.stream(
        "POST",
        f"{url}/v1/text-to-speech/{voice}/stream?output_format=pcm_24000",
        json={"text": text},
        headers={"xi-api-key": key},
    ) as response:
        response.raise_for_status()
        for chunk in response.iter_raw():
            if chunk and first is None:
                first = time.perf_counter() - started
            audio += chunk
    total = time.perf_counter() - started
    GAPS[(label + " stream", text)] = longest_gap(bytes(audio))
    return first or float("nan"), total


def measure(label: str, extra_env: dict[str, str], voice: str, rounds: int) -> dict[str, tuple[float, float, float]]:
    os.environ.update(extra_env)
    results: dict[str, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-first-clause-") as tmp:
        proc, url, key = start_platform(Path(tmp), None)
        try:
            with httpx.Client(timeout=300) as client:
                for text in sentences():  # warm: the engine, the front end, the first run's activations
                    whole(client, url, key, voice, text)
                for text in sentences():
                    firsts, totals, wholes = [], [], []
                    for n in range(rounds):
                        if n % 2:
                            wholes.append(whole(client, url, key, voice, text, label))
                            first, total = stream(client, url, key, voice, text, label)
                        else:
                            first, total = stream(client, url, key, voice, text, label)
                            wholes.append(whole(client, url, key, voice, text, label))
                        firsts.append(first)
                        totals.append(total)
                    results[text] = (statistics.median(firsts), statistics.median(totals), statistics.median(wholes))
                    f, t, w = results[text]
                    print(
                        f"{label:8} {text}  first {f:.2f} s  stream {t:.2f} s  whole {w:.2f} s  "
                        f"first/whole {f / w:.2f}",
                        flush=True,
                    )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    for name in extra_env:
        os.environ.pop(name, None)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--voice", default="zf_xiaoxiao")
    args = parser.parse_args()
    os.environ.setdefault("TTS_KOKORO_VOICES_DIR", str(ROOT / "var" / "npm"))
    os.environ.setdefault("TTS_ENGINE_THREADS", "1")
    cut = measure("cut", {}, args.voice, args.rounds)
    uncut = measure("whole", {"TTS_FIRST_CLAUSE_MIN_CHARS": "0"}, args.voice, args.rounds)
    print()
    print("| sentence | first audio / whole file, cut | the same, no cut (before) | stream total / whole file, cut |")
    print("|---|---:|---:|---:|")
    for text, (first, total, whole_s) in cut.items():
        before = uncut[text]
        print(
            f"| {text} | **{first / whole_s:.2f}** ({first:.2f} / {whole_s:.2f} s) | "
            f"{before[0] / before[2]:.2f} ({before[0]:.2f} / {before[2]:.2f} s) | {total / whole_s:.2f} |"
        )
    print()
    print("| sentence | longest pause inside: whole file | stream, cut | stream, no cut |")
    print("|---|---:|---:|---:|")
    for text in cut:
        print(
            f"| {text} | {GAPS[('cut whole', text)]:.2f} s | {GAPS[('cut stream', text)]:.2f} s | "
            f"{GAPS[('whole stream', text)]:.2f} s |"
        )
    ratios = [first / whole_s for first, _, whole_s in cut.values()]
    print(f"\nmedian first audio / whole file with the cut: {statistics.median(ratios):.2f} (target <= 0.45)")


if __name__ == "__main__":
    main()
