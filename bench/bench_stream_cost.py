"""What a stream costs beside the same text whole (issue #28), in one run, beside Piper's server.

A benchmark, not a test. It starts this platform (audio cache off) and Piper's
HTTP server with the joe voice, then measures, on the texts of
``bench/texts.json`` (or ``BENCH_TEXTS``):

* 1 client, ``long`` (about 2,000 characters): the whole file
  (``POST /v1/text-to-speech/joe``, pcm) against ``/stream`` (pcm): total, and
  the stream's first byte as a fraction of the whole file's time;
* 4 clients, ``medium``, 2 requests each: seconds of audio delivered per second
  of wall time, whole file against ``/stream``;
* 4 clients, ``long``, streams: underruns seen by the clients (a chunk whose
  audio starts before playback, begun at the first byte, reaches it);
* one sentence (``short``, 63 characters; ``long_single_sentence``, 349): the
  stream's first byte against Piper's total.

    .venv/bin/python bench/bench_stream_cost.py [--rounds 2] [--out results.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from bench_streaming import RATE, TEXTS, piper, start_piper, start_platform


def stream(client: httpx.Client, base: str, key: str, text: str) -> tuple[float, float, float, int]:
    """(first byte, total, audio seconds, underruns) of one ``/stream`` request, as its client saw it."""
    start = time.perf_counter()
    first: float | None = None
    received = 0
    underruns = 0
    url = f"{base}/v1/text-to-speech/joe/stream?output_format=pcm_22050"
    with client.stream("POST", url, json={"text": text}, headers={"xi-api-key": key}) as response:
        if response.status_code != 200:
            raise RuntimeError(f"stream: {response.status_code} {response.read()[:300]!r}")
        for chunk in response.iter_raw():
            if not chunk:
                continue
            now = time.perf_counter()
            if first is None:
                first = now
            elif received / 2 / RATE < now - first:  # this chunk's audio should have started playing
                underruns += 1
            received += len(chunk)
    total = time.perf_counter() - start
    return (first - start) if first is not None else total, total, received / 2 / RATE, underruns


def whole(client: httpx.Client, base: str, key: str, text: str) -> tuple[float, float]:
    """(total, audio seconds) of one whole-file request."""
    start = time.perf_counter()
    response = client.post(
        f"{base}/v1/text-to-speech/joe?output_format=pcm_22050", json={"text": text}, headers={"xi-api-key": key}
    )
    if response.status_code != 200:
        raise RuntimeError(f"whole file: {response.status_code} {response.text[:300]}")
    return time.perf_counter() - start, len(response.content) / 2 / RATE


def concurrent(clients: int, requests: int, fn: Callable[[httpx.Client], float]) -> tuple[float, list[float]]:
    """(wall seconds, each request's audio seconds) of ``requests`` calls of ``fn`` from ``clients`` threads."""

    def worker(n: int) -> list[float]:
        with httpx.Client(timeout=600) as client:
            return [fn(client) for _ in range(n)]

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(worker, [requests // clients] * clients))
    return time.perf_counter() - start, [a for r in results for a in r]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each measurement (default 2)")
    parser.add_argument("--out", type=Path, help="also write the markdown results here")
    args = parser.parse_args()
    texts = json.loads(TEXTS.read_text())
    long_text, medium, short, sentence = texts["long"], texts["medium"], texts["short"], texts["long_single_sentence"]
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-stream-cost-") as tmp:
        workdir = Path(tmp)
        platform_proc, base, key = start_platform(workdir, None)
        piper_proc, piper_url = start_piper(workdir)
        piper_fn = piper(piper_url)
        try:
            with httpx.Client(timeout=600) as client:
                stream(client, base, key, short)  # load and warm both engines
                piper_fn(client, short)
                # 1 client, long text: whole file, then stream, alternating.
                wholes, totals, firsts = [], [], []
                for _ in range(args.rounds):
                    wholes.append(whole(client, base, key, long_text)[0])
                    first, total, _, _ = stream(client, base, key, long_text)
                    totals.append(total)
                    firsts.append(first)
                    print(
                        f"long x1: whole {wholes[-1]:.2f} s, stream {total:.2f} s, first {first:.3f} s", file=sys.stderr
                    )
                w, t, f = statistics.median(wholes), statistics.median(totals), statistics.median(firsts)
                lines += [
                    f"- 1 client, long ({len(long_text)} chars), {args.rounds} rounds, medians: whole file {w:.2f} s "
                    f"({min(wholes):.2f}-{max(wholes):.2f}); /stream total {t:.2f} s "
                    f"({min(totals):.2f}-{max(totals):.2f})"
                    f" = **{t / w:.2f}x** (target <= 1.1); first byte {f * 1000:.0f} ms = **{f / w:.3f}** of the whole "
                    f"file's time (target <= 0.05)",
                ]
                # One sentence: stream first byte against Piper's total.
                for label, text, target in (("short", short, 0.5), ("long_single_sentence", sentence, 0.25)):
                    ours_first, theirs = [], []
                    for _ in range(max(3, args.rounds)):
                        ours_first.append(stream(client, base, key, text)[0])
                        theirs.append(piper_fn(client, text).total)
                    o, p = statistics.median(ours_first), statistics.median(theirs)
                    lines.append(
                        f"- one sentence, {label} ({len(text)} chars): first byte {o * 1000:.0f} ms, Piper's total "
                        f"{p * 1000:.0f} ms: **{o / p:.2f}x** (target <= {target})"
                    )
            # 4 clients, medium: audio seconds per second, whole against stream.
            for label, fn in (
                ("whole file", lambda c: whole(c, base, key, medium)[1]),
                ("/stream", lambda c: stream(c, base, key, medium)[2]),
            ):
                rates = []
                for _ in range(args.rounds):
                    wall, audio = concurrent(4, 8, fn)
                    rates.append(sum(audio) / wall)
                lines.append(
                    f"- 4 clients, medium, 8 requests: {label} {statistics.median(rates):.1f} audio s/s "
                    f"({min(rates):.1f}-{max(rates):.1f})"
                )
                print(lines[-1], file=sys.stderr)
            whole_rate = float(lines[-2].split(" audio s/s")[0].rsplit(" ", 1)[1])
            stream_rate = float(lines[-1].split(" audio s/s")[0].rsplit(" ", 1)[1])
            lines.append(
                f"- 4 clients, medium: /stream **{stream_rate / whole_rate:.2f}x** the whole file (target >= 0.97)"
            )
            # 4 clients, long streams: underruns the clients saw.
            seen: list[int] = []

            def long_stream(c: httpx.Client) -> float:
                _, _, audio, underruns = stream(c, base, key, long_text)
                seen.append(underruns)
                return audio

            wall, audio = concurrent(4, 4, long_stream)
            lines.append(
                f"- 4 clients, long streams: **{sum(seen)} underruns** in {len(seen)} streams "
                f"({sum(audio) / wall:.1f} audio s/s; target 0)"
            )
        finally:
            for proc in (platform_proc, piper_proc):
                proc.terminate()
                proc.wait(timeout=20)
    load = os.getloadavg()[0]
    report = "\n".join(lines) + f"\n\nMachine: {os.cpu_count()} CPUs, load average {load:.1f} at the end.\n"
    print(report)
    if args.out:
        args.out.write_text(report)


if __name__ == "__main__":
    main()
