"""How many of the platform's modules one request passes through, per entry point.

Not a speed benchmark: a map of the code a request crosses, for the
capability-package layout (docs/architecture.md). It starts a real daphne and
a real Wyoming server (SQLite, audio cache off) whose threads all carry the
profile function of ``bench/request_path_site/sitecustomize.py``, warms each
request type once, then records one request of each: a whole-file REST
synthesis, a chunked HTTP stream, a stream-input WebSocket utterance, a
Wyoming ``synthesize`` and a long-form job (run by the server's job thread).

For each it prints:

- **modules**: distinct modules of ``tts``, ``accounts``, ``infra`` and
  ``ttsplatform`` (migrations and management commands left out) whose
  functions ran for the request, in any thread;
- **stays**: the runs of consecutive calls inside one module, per thread,
  summed (a request that goes A -> B -> A has three stays);
- **returns**: stays in a module that thread had already left once;
- the same three for the **app** modules alone: those above the engines,
  text, audio and infrastructure (``BELOW``), where the pipeline's own
  structure shows.

Usage::

    .venv/bin/python bench/request_path.py            # the table
    .venv/bin/python bench/request_path.py --detail   # and each request's modules, in first-visit order
    .venv/bin/python bench/request_path.py --sequence stays.json   # each thread's app-module stays, in order
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx
import websockets.sync.client
from readiness import wait_ready
from wyoming.audio import AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize, SynthesizeVoice

ROOT = Path(__file__).resolve().parent.parent
SITE = Path(__file__).resolve().parent / "request_path_site"
PY = sys.executable


@dataclass
class Path_:
    name: str
    modules: list[str]
    stays: int
    returns: int
    visits: Counter[str]


#: Rooms below the pipeline (engines, text, audio, infrastructure): the "app" columns leave them out.
BELOW = ("tts.inference", "tts.text", "tts.audio", "infra")


def analyse(name: str, threads: list[list[str]], *, app_only: bool = False) -> Path_:
    if app_only:
        threads = [[m for m in calls if not m.startswith(BELOW)] for calls in threads]
    order: list[str] = []
    visits: Counter[str] = Counter()
    stays = returns = 0
    for calls in threads:
        left: set[str] = set()
        current = None
        for module in calls:
            if module == current:
                continue
            if current is not None:
                left.add(current)
            stays += 1
            visits[module] += 1
            returns += module in left
            current = module
            if module not in order:
                order.append(module)
    return Path_(name, order, stays, returns, visits)


def stays_of(calls: list[str]) -> list[str]:
    """One thread's app modules in the order it stayed in them (consecutive calls in one module: one stay)."""
    stays: list[str] = []
    for module in calls:
        if not module.startswith(BELOW) and (not stays or stays[-1] != module):
            stays.append(module)
    return stays


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Servers:
    def __init__(self) -> None:
        self.var = tempfile.mkdtemp(prefix="request-path-")
        self.env = {
            **os.environ,
            "VAR_DIR": self.var,
            "SECRET_KEY": "request-path",
            "DEV_SETTINGS": "off",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "LOG_LEVEL": "ERROR",
            "TTS_AUDIO_CACHE_ENABLED": "false",
            "TTS_MODEL_LIFECYCLE": "false",
            "PYTHONPATH": os.pathsep.join([str(SITE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "REQUEST_PATH_ROOT": str(ROOT),
        }
        for var in ("DATABASE_URL", "REDIS_URL"):  # SQLite and in-process layers, as make run
            self.env.pop(var, None)
        manage = [PY, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=self.env, check=True, cwd=ROOT)
        key_file = Path(self.var) / "wyoming.key"
        subprocess.run(
            [*manage, "setup_demo", "--no-kokoro", "--wyoming-key-file", str(key_file)],
            env=self.env,
            check=True,
            cwd=ROOT,
            capture_output=True,
        )
        self.key = subprocess.run(
            [*manage, "createapikey", "demo"], env=self.env, check=True, cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        self.port, self.wport = free_port(), free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.web_out, self.wy_out = Path(self.var) / "web.json", Path(self.var) / "wyoming.json"
        self.web = subprocess.Popen(
            [PY, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "ttsplatform.asgi:application"],
            env={**self.env, "REQUEST_PATH_OUT": str(self.web_out)},
            cwd=ROOT,
        )
        self.wyoming = subprocess.Popen(
            [*manage, "wyoming_server", "--port", str(self.wport), "--api-key-file", str(key_file)],
            env={**self.env, "REQUEST_PATH_OUT": str(self.wy_out)},
            cwd=ROOT,
        )
        wait_ready(self.base, self.web)
        for _ in range(200):
            try:
                asyncio.run(self._wyoming("Ready."))
                break
            except OSError:
                time.sleep(0.1)

    def close(self) -> None:
        for proc in (self.web, self.wyoming):
            proc.terminate()
            proc.wait(30)

    def traced(self, proc: subprocess.Popen[bytes], out: Path, run: object) -> list[list[str]]:
        out.unlink(missing_ok=True)
        proc.send_signal(signal.SIGUSR1)
        time.sleep(0.3)
        run()  # type: ignore[operator]
        time.sleep(0.3)
        proc.send_signal(signal.SIGUSR2)
        for _ in range(100):
            if out.exists() and out.stat().st_size:
                time.sleep(0.1)
                return list(json.loads(out.read_text()))
            time.sleep(0.1)
        raise TimeoutError(f"no trace in {out}")

    # --- one request of each kind -------------------------------------------------

    def rest(self, text: str) -> None:
        r = httpx.post(
            f"{self.base}/v1/text-to-speech/joe", headers={"xi-api-key": self.key}, json={"text": text}, timeout=60
        )
        assert r.status_code == 200 and len(r.content) > 1000, (r.status_code, r.text[:200])

    def stream(self, text: str) -> None:
        url = f"{self.base}/v1/text-to-speech/joe/stream"
        with httpx.stream("POST", url, headers={"xi-api-key": self.key}, json={"text": text}, timeout=60) as r:
            assert r.status_code == 200
            assert sum(len(c) for c in r.iter_bytes()) > 1000

    def websocket(self, text: str) -> None:
        url = f"ws://127.0.0.1:{self.port}/v1/text-to-speech/joe/stream-input?xi-api-key={self.key}"
        with websockets.sync.client.connect(url) as ws:
            ws.send(json.dumps({"text": " "}))
            ws.send(json.dumps({"text": text + " "}))
            ws.send(json.dumps({"text": ""}))
            got = 0
            while True:
                message = json.loads(ws.recv(timeout=60))
                got += len(message.get("audio") or "")
                if message.get("isFinal"):
                    break
            assert got > 1000

    async def _wyoming(self, text: str) -> int:
        got = 0
        async with AsyncTcpClient("127.0.0.1", self.wport) as client:
            await client.write_event(Synthesize(text=text, voice=SynthesizeVoice(name="joe")).event())
            while True:
                event = await asyncio.wait_for(client.read_event(), 60)
                assert event is not None
                if AudioStop.is_type(event.type):
                    return got
                got += len(event.payload or b"")

    def wyoming_request(self, text: str) -> None:
        assert asyncio.run(self._wyoming(text)) > 1000

    def job(self, text: str) -> None:
        r = httpx.post(
            f"{self.base}/v1/jobs", headers={"xi-api-key": self.key}, json={"text": text, "voice_id": "joe"}, timeout=60
        )
        assert r.status_code in (200, 201, 202), (r.status_code, r.text[:300])
        db = sqlite3.connect(Path(self.var) / "db.sqlite3")
        for _ in range(1200):  # polled in the database, not through the traced server
            status = db.execute("select status from tts_job order by created_at desc limit 1").fetchone()[0]
            if status not in ("queued", "running"):
                assert status == "succeeded", status
                return
            time.sleep(0.1)
        raise TimeoutError("the job did not finish")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--detail", action="store_true", help="list each request's modules")
    parser.add_argument("--sequence", metavar="FILE", help="write each request's app-module stays, per thread, as JSON")
    args = parser.parse_args()
    servers = Servers()
    try:
        kinds = [
            ("REST", servers.web, servers.web_out, servers.rest),
            ("stream", servers.web, servers.web_out, servers.stream),
            ("WebSocket", servers.web, servers.web_out, servers.websocket),
            ("Wyoming", servers.wyoming, servers.wy_out, servers.wyoming_request),
            ("job", servers.web, servers.web_out, servers.job),
        ]
        results = []
        sequences: dict[str, list[list[str]]] = {}
        for name, proc, out, call in kinds:
            call("A warm-up sentence, spoken once.")
            threads = servers.traced(proc, out, lambda call=call: call("The request we follow, one sentence."))
            results.append((analyse(name, threads), analyse(name, threads, app_only=True)))
            sequences[name] = [stays_of(calls) for calls in threads]
    finally:
        servers.close()
    print("| request | modules | stays | returns | app modules | app stays | app returns |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r, a in results:
        print(f"| {r.name} | {len(r.modules)} | {r.stays} | {r.returns} | {len(a.modules)} | {a.stays} | {a.returns} |")
    if args.sequence:
        Path(args.sequence).write_text(json.dumps(sequences, indent=1))
    if args.detail:
        for r, _ in results:
            print(f"\n{r.name}:")
            for module in r.modules:
                print(f"  {r.visits[module]:3d}  {module}")


if __name__ == "__main__":
    main()
