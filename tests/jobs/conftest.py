"""Fixtures for job tests: long English text, a recorder for job dispatch, and
real Celery worker processes on the test database and Redis (db of REDIS_URL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.servers import ROOT, test_database_url
from tts.models import Job

SENTENCES = [
    "The harbour was quiet that morning, and the fishing boats rocked against the old stone wall.",
    "Gulls argued over scraps near the market while the baker opened his shutters.",
    "Nobody in the village remembered a winter as long as the one that had just ended.",
    "She folded the letter twice, put it in her coat pocket, and walked down to the pier.",
    "At noon the ferry sounded its horn, and the children ran to watch it come in.",
    "The lighthouse keeper wrote the weather in his book every evening at six.",
    "Rain drifted in from the west, soft at first, then heavy enough to drum on the roofs.",
    "By the time the lamps were lit, the square was empty except for a sleeping dog.",
]


def long_text(chars: int) -> str:
    """Plausible prose of about ``chars`` characters (never more)."""
    out: list[str] = []
    size = 0
    i = 0
    while True:
        sentence = SENTENCES[i % len(SENTENCES)]
        if size + len(sentence) + 1 > chars:
            break
        out.append(sentence)
        size += len(sentence) + 1
        i += 1
    return " ".join(out)


@pytest.fixture
def dispatched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Job ids handed to a runner, recorded instead of run (tests call job_run themselves)."""
    calls: list[str] = []
    monkeypatch.setattr("tts.jobs.actions.job_dispatch", lambda job_id: calls.append(str(job_id)))
    monkeypatch.setattr("tts.jobs.runner.job_dispatch", lambda job_id: calls.append(str(job_id)))
    return calls


def wait_job(job_id: object, until: Callable[[Job], bool], *, timeout: float = 180.0) -> Job:
    deadline = time.monotonic() + timeout
    while True:
        job = Job.objects.get(pk=job_id)
        if until(job):
            return job
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} stuck at {job.status} {job.done_chunks}/{job.total_chunks}")
        time.sleep(0.1)


class WorkerProc:
    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path) -> None:
        self.proc = proc
        self.log_path = log_path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL: no clean-up, no ack; what a crashed machine looks like."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def _clear_broker() -> None:
    """Drop messages left in this test Redis db by earlier runs (only Celery's own keys)."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    client.delete("celery", "unacked", "unacked_index", "unacked_mutex")


@pytest.fixture
def celery_worker_factory(django_db_setup: None) -> Iterator[Callable[..., WorkerProc]]:
    """Start real ``celery worker`` processes (solo pool) against the test database."""
    _clear_broker()
    started: list[WorkerProc] = []

    def start(extra_env: dict[str, str] | None = None) -> WorkerProc:
        env = dict(os.environ)
        env["DATABASE_URL"] = test_database_url()
        env["REDIS_URL"] = settings.REDIS_URL
        env["PYTHONUNBUFFERED"] = "1"
        env["LOG_LEVEL"] = "INFO"
        # One ONNX thread, as `make worker`: on a busy 2-core machine a second thread
        # made the 20,000-character job take 170 s instead of 79 s (docs/benchmarks.md).
        env["TTS_ENGINE_THREADS"] = "1"
        env.update(extra_env or {})
        name = f"jobs-test-{len(started)}-{os.getpid()}"
        log_path = Path(env.get("VAR_DIR", "/tmp")) / f"{name}.log"
        log = open(log_path, "wb")  # noqa: SIM115 - the child process owns it
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "ttsplatform", "worker", "-P", "solo", "-l", "info",
             "-n", f"{name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        worker = WorkerProc(proc, log_path)
        started.append(worker)
        deadline = time.monotonic() + 60
        while " ready." not in worker.log():
            if proc.poll() is not None or time.monotonic() > deadline:
                worker.stop()
                raise RuntimeError(f"celery worker did not start:\n{worker.log()[-4000:]}")
            time.sleep(0.2)
        return worker

    yield start
    for worker in started:
        worker.stop()
    _clear_broker()
