"""Wyoming under hostile clients (#32 item 5): the server's memory with clients that send the largest
events the bounds allow and read nothing, and what a describe flood does to a cached synthesize.

A benchmark, not a test. It starts the platform's Wyoming server (``bench_wyoming.start_platform``:
SQLite, the demo tenant with joe and Kokoro's 54 voices, so an ``info`` answer is about 79 KB as in
the issue; ``--root`` runs another checkout's server, to measure before and after), then:

* memory: N clients (6, then the listener's whole ``TTS_WYOMING_MAX_CONNECTIONS``), each from its
  own loopback address (so none meets the per-address limits), with a 4 KiB receive buffer,
  reading nothing: 60 describes whose header line and data block are each ~63 KB of
  ``[{},{},...]`` (the answers they do not read fill the buffers, the server stops handling
  their events), then 100 ``synthesize-chunk`` events of the same size whose ``text`` is
  kept; each client sends until the server stops reading. The server's RSS is sampled every
  50 ms: before, peak, and once every client is blocked;
* describe flood: one client synthesizes texts.json's ``short`` again and again (a cache hit after
  the first; time from the request to ``audio-stop``), alone and while K other clients (in a
  process of their own) send 95 describes a second each and read the answers, all from one
  address (the issue's flood: the per-address bound refuses most of it) and from K addresses.

Targets (#32): RSS growth under 256 MB with 6 hostile clients, and under the bound docs/limits.md
states for a full listener; the cached synthesize not slowed by the flood (the issue, before:
12 ms alone, 0.4-0.5 s with 8 flooders, 2-3 s with 48).

    .venv/bin/python bench/bench_wyoming_hostile.py [--clients 6,64] [--flooders 8,48] [--root ../main]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import sys
import tempfile
import threading
import time
from multiprocessing import Process, Queue
from pathlib import Path

from wyoming.audio import AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.tts import Synthesize

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_wyoming import ROOT, TEXTS, free_port, wait_port
from bench_wyoming import start_platform as start_wyoming

FILLER = b"[" + b"{}," * 21_000 + b"{}]"  # ~63 KB of JSON that grows ~24 times once parsed
SENTENCE = json.loads(TEXTS.read_text(encoding="utf-8"))["short"]  # 63 characters, one sentence


def hostile_events() -> tuple[bytes, bytes]:
    """A describe with a ~63 KB header and data block, and a synthesize-chunk with a ~63 KB text."""
    block = b'{"y": ' + FILLER + b"}"
    header = b'{"type": "describe", "data": {"x": ' + FILLER + b'}, "data_length": %d}\n'
    describe = header % len(block) + block
    text = json.dumps({"text": "a" * len(FILLER)}).encode()
    chunk = json.dumps({"type": "synthesize-chunk", "data_length": len(text)}).encode() + b"\n" + text
    return describe, chunk


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
    return int(found.group(1)) / 1024 if found else 0.0


class Sampler:
    """The server's RSS every 50 ms on a thread: its peak since ``reset``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mb(self.pid))

    def reset(self) -> None:
        self.peak = rss_mb(self.pid)

    def stop(self) -> None:
        self._stop.set()


def settle(pid: int, *, timeout: float = 300) -> float:
    """Wait until the server's RSS holds still (its models warmed: TTS_MODEL_LIFECYCLE); the RSS."""
    deadline = time.monotonic() + timeout
    history: list[float] = []
    while time.monotonic() < deadline:
        history.append(rss_mb(pid))
        if len(history) >= 10 and max(history[-10:]) - min(history[-10:]) < 2:
            break
        time.sleep(0.5)
    return history[-1]


def memory_run(port: int, sampler: Sampler, clients: int) -> dict[str, float]:
    describe, chunk = hostile_events()
    sockets: list[socket.socket] = []
    blocked = [threading.Event() for _ in range(clients)]
    sent = [0] * clients

    def flood(index: int, sock: socket.socket) -> None:
        sock.settimeout(3)
        try:
            for event in [describe] * 60 + [chunk] * 100:
                sock.sendall(event)
                sent[index] += len(event)
        except OSError:  # blocked for 3 s (the server stopped reading), or refused
            pass
        blocked[index].set()

    settle(sampler.pid)
    sampler.reset()
    before = sampler.peak
    threads = []
    for i in range(clients):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.bind((f"127.0.1.{i + 1}", 0))
        sock.connect(("127.0.0.1", port))
        sockets.append(sock)
        threads.append(threading.Thread(target=flood, args=(i, sock), daemon=True))
    started = time.monotonic()
    for thread in threads:
        thread.start()
    while not all(b.is_set() for b in blocked) and time.monotonic() - started < 120:
        time.sleep(0.1)
    time.sleep(2)
    held = rss_mb(sampler.pid)
    peak = sampler.peak
    for sock in sockets:
        sock.close()
    time.sleep(3)
    return {
        "clients": clients,
        "before": before,
        "peak": peak,
        "held": held,
        "growth": peak - before,
        "sent_mb": sum(sent) / 1e6,
        "after_close": rss_mb(sampler.pid),
    }


async def _flooder(port: int, source: str, stop: asyncio.Event, counts: dict[str, int]) -> None:
    """95 describes a second, reading the answers; refused (closed), it connects again 0.1 s later."""
    describe = json.dumps({"type": "describe"}).encode() + b"\n"
    while not stop.is_set():
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        counts["connections"] += 1

        async def drain_answers(reader: asyncio.StreamReader = reader) -> None:
            while await reader.read(1 << 16):
                pass

        draining = asyncio.create_task(drain_answers())
        try:
            while not stop.is_set() and not draining.done():
                writer.write(describe)
                counts["sent"] += 1
                await asyncio.sleep(1 / 95)
        finally:
            writer.close()
            draining.cancel()
        if not stop.is_set():
            await asyncio.sleep(0.1)


async def _cached_synthesize(port: int, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        async with AsyncTcpClient("127.0.0.1", port, read_timeout=60) as client:
            await client.write_event(Synthesize(text=SENTENCE).event())
            while (event := await client.read_event()) is not None:
                if Error.is_type(event.type):
                    raise RuntimeError(f"synthesize refused: {event.data}")
                if AudioStop.is_type(event.type):
                    break
        times.append(time.perf_counter() - started)
        await asyncio.sleep(0.05)
    return times


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _flood(port: int, sources: list[str], seconds: float, out: Queue) -> None:  # type: ignore[type-arg]
    stop = asyncio.Event()
    counts = {"sent": 0, "connections": 0}
    tasks = [asyncio.create_task(_flooder(port, source, stop, counts)) for source in sources]
    await asyncio.sleep(2)
    sent, started = counts["sent"], time.monotonic()
    await asyncio.sleep(seconds)
    out.put({"describes_per_s": (counts["sent"] - sent) / (time.monotonic() - started), **counts})
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)


def _flood_process(port: int, sources: list[str], seconds: float, out: Queue) -> None:  # type: ignore[type-arg]
    asyncio.run(_flood(port, sources, seconds, out))


def flood_run(port: int, pid: int, flooders: int, rounds: int, *, one_address: bool) -> dict[str, float]:
    """The cached synthesize timed here, the flooders in a process of their own (their reading would
    otherwise delay this process's client, not the server)."""
    asyncio.run(_cached_synthesize(port, 2))  # the first one fills the cache
    sources = ["127.0.2.1" if one_address else f"127.0.2.{i + 1}" for i in range(flooders)]
    out: Queue = Queue()  # type: ignore[type-arg]
    seconds = 0.1 * rounds + 8
    flooding = Process(target=_flood_process, args=(port, sources, seconds, out), daemon=True)
    if flooders:
        flooding.start()
        time.sleep(3)
    started, cpu = time.monotonic(), cpu_seconds(pid)
    times = asyncio.run(_cached_synthesize(port, rounds))
    wall = time.monotonic() - started
    server_cpu = (cpu_seconds(pid) - cpu) / wall
    counts = {"describes_per_s": 0.0, "connections": 0}
    if flooders:
        counts = out.get(timeout=120)
        flooding.join(60)
    times.sort()
    return {
        "flooders": flooders,
        "addresses": 1 if one_address else flooders,
        "connections": counts["connections"],
        "describes_per_s": counts["describes_per_s"],
        "server_cpu": server_cpu,
        "median_ms": 1000 * statistics.median(times),
        "p95_ms": 1000 * times[max(0, round(0.95 * len(times)) - 1)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="6,64", help="hostile clients per memory run")
    parser.add_argument("--flooders", default="0,8,48", help="describe flooders per latency run")
    parser.add_argument("--rounds", type=int, default=30, help="cached syntheses timed per latency run")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose server runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-wyoming-hostile-") as tmp:
        port = free_port()
        proc, _env = start_wyoming(Path(tmp), port, kokoro=True, root=args.root.resolve())
        try:
            wait_port(port, proc)
            asyncio.run(_cached_synthesize(port, 1))  # joe loaded, the describe answer's voices too
            settle(proc.pid)
            sampler = Sampler(proc.pid)
            memory = [memory_run(port, sampler, int(n)) for n in args.clients.split(",") if n]
            sampler.stop()
            flood = []
            for n in [int(n) for n in args.flooders.split(",") if n]:
                for one_address in [True, False] if n else [True]:
                    flood.append(flood_run(port, proc.pid, n, args.rounds, one_address=one_address))
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"server: {args.root.resolve()}, load average {os.getloadavg()[0]:.2f}\n")
    print("| hostile clients | RSS before | peak | held, all blocked | growth | sent by clients | after they left |")
    print("|---|---|---|---|---|---|---|")
    for m in memory:
        print(
            f"| {m['clients']:.0f} | {m['before']:.0f} MB | {m['peak']:.0f} MB | {m['held']:.0f} MB "
            f"| **{m['growth']:.0f} MB** | {m['sent_mb']:.0f} MB | {m['after_close']:.0f} MB |"
        )
    print(
        "\n| describe flooders | from addresses | describes/s sent | connections made "
        "| server CPU | cached synthesize, median | p95 |"
    )
    print("|---|---|---|---|---|---|---|")
    for f in flood:
        print(
            f"| {f['flooders']:.0f} | {f['addresses']:.0f} | {f['describes_per_s']:.0f} | {f['connections']:.0f} "
            f"| {100 * f['server_cpu']:.0f} % | {f['median_ms']:.0f} ms | {f['p95_ms']:.0f} ms |"
        )


if __name__ == "__main__":
    main()
