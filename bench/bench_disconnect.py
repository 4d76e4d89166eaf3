"""What a gone client still costs: CPU of the web process after the clients of long streams hang up.

A benchmark, not a test. It starts one daphne (audio cache off), warms the
engines, then for each voice (Kokoro's ``af_heart``, whole sentences; Piper's
``joe``, in windows) opens ``--streams`` concurrent streams of bench/texts.json's
``long`` text (1,974 characters, ~2 minutes of audio each), reads each one's
first audio, and closes every connection at once, as browser tabs do. From that
moment it reads the daphne process's CPU time (``/proc/<pid>/stat``: user +
system) until it has been idle for two seconds:

* CPU s after: what the process spent after the clients went away;
* idle after s: wall time until it went idle;
* CPU s to first audio: what it spent from the requests to the first audio of
  all of them (the work a gone client had legitimately caused), for scale.

The HTTP stream (``/stream``) and the stream-input WebSocket are measured the
same way (``--routes``). One segment in flight per stream is what the fix
allows; without it the look-ahead and the prefetch kept synthesizing.

    .venv/bin/python bench/bench_disconnect.py [--streams 4] [--voices af_heart joe] [--routes http ws]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_streaming import TEXTS, start_platform

ROOT = Path(__file__).resolve().parent.parent
RATES = {"af_heart": 24000, "joe": 22050}
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def wait_idle(pid: int, *, quiet_s: float = 2.0, timeout: float = 120.0) -> tuple[float, float]:
    """(CPU s spent, wall s) until ``pid`` used under 2 % of a core for ``quiet_s``."""
    start_cpu, start = cpu_seconds(pid), time.monotonic()
    last_cpu, last_busy = start_cpu, start
    while time.monotonic() - start < timeout:
        time.sleep(0.25)
        now_cpu = cpu_seconds(pid)
        if now_cpu - last_cpu > 0.005:
            last_busy = time.monotonic()
        last_cpu = now_cpu
        if time.monotonic() - last_busy >= quiet_s:
            break
    return last_cpu - start_cpu, last_busy - start


def http_open(url: str, key: str, voice: str, text: str) -> socket.socket:
    """A raw connection with a stream request sent and its first audio bytes read."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({"text": text}).encode()
    sock = socket.create_connection((host, int(port)))
    sock.sendall(
        f"POST /v1/text-to-speech/{voice}/stream?output_format=pcm_{RATES[voice]} HTTP/1.1\r\n"
        f"Host: {host}\r\nxi-api-key: {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    head = b""
    while b"\r\n\r\n" not in head:
        piece = sock.recv(65536)
        if not piece:
            raise RuntimeError("connection closed before the response")
        head += piece
    status = head.split(b" ", 2)[1]
    if status != b"200":
        raise RuntimeError(f"stream refused: {head[:300]!r}")
    if len(head.split(b"\r\n\r\n", 1)[1]) < 64:
        sock.recv(65536)
    return sock


async def ws_open_all(url: str, key: str, voice: str, text: str, streams: int) -> list[object]:
    """``streams`` stream-input sockets, each with the text sent and its first audio received."""
    query = f"output_format=pcm_{RATES[voice]}"
    ws_url = url.replace("http://", "ws://") + f"/v1/text-to-speech/{voice}/stream-input?{query}"

    async def one() -> object:
        ws = await websockets.connect(ws_url, additional_headers={"xi-api-key": key}, max_size=None)
        await ws.send(json.dumps({"text": " "}))
        await ws.send(json.dumps({"text": text, "flush": True}))
        while True:
            message = json.loads(await ws.recv())
            if message.get("audio"):
                return ws

    return list(await asyncio.gather(*(one() for _ in range(streams))))


def measure(url: str, key: str, pid: int, voice: str, route: str, streams: int, text: str) -> dict[str, float]:
    wait_idle(pid, quiet_s=1.0)
    before = cpu_seconds(pid)
    if route == "http":
        socks = [http_open(url, key, voice, text) for _ in range(streams)]
        at_first_audio = cpu_seconds(pid)
        for sock in socks:
            sock.close()
    else:
        loop = asyncio.new_event_loop()
        sockets = loop.run_until_complete(ws_open_all(url, key, voice, text, streams))
        at_first_audio = cpu_seconds(pid)
        for ws in sockets:
            ws.transport.abort()  # type: ignore[attr-defined]  # the client is gone, no closing handshake
        loop.run_until_complete(asyncio.sleep(0.2))  # the abort closes the sockets on the loop's next turn
        loop.close()
    after, idle_s = wait_idle(pid)
    return {"first": at_first_audio - before, "after": after, "idle": idle_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--voices", nargs="+", default=["af_heart", "joe"])
    parser.add_argument("--routes", nargs="+", default=["http", "ws"], choices=["http", "ws"])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    text = json.loads(TEXTS.read_text())["long"]
    os.environ.setdefault("TTS_KOKORO_VOICES_DIR", str(ROOT / "var" / "npm"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-disconnect-") as tmp:
        proc, url, key = start_platform(Path(tmp), None)
        try:
            with httpx.Client(timeout=300) as client:
                for voice in args.voices:  # load and warm each engine
                    r = client.post(
                        f"{url}/v1/text-to-speech/{voice}?output_format=pcm_{RATES[voice]}",
                        json={"text": "Warming up the engine."},
                        headers={"xi-api-key": key},
                    )
                    r.raise_for_status()
            for voice in args.voices:
                for route in args.routes:
                    for _ in range(args.rounds):
                        rows.append((voice, route, measure(url, key, proc.pid, voice, route, args.streams, text)))
                        print(voice, route, rows[-1][2], file=sys.stderr, flush=True)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    load = os.getloadavg()
    print(
        f"{args.streams} streams of {len(text)} characters each, closed after their first audio; "
        f"{os.cpu_count()} cores; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n"
    )
    print("| voice | route | CPU s to first audio | CPU s after the clients left | idle after s |")
    print("|---|---|---|---|---|")
    for voice, route, m in rows:
        print(f"| {voice} | {route} | {m['first']:.2f} | {m['after']:.2f} | {m['idle']:.1f} |")


if __name__ == "__main__":
    main()
