"""Celery workers follow model activations too: a real prefork worker warms the
active version at start-up and the newly activated one within seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import servers
from tests.fixtures import make_joe
from tests.ops.second_version import write_joe_copy
from tts.catalogue.model_import import activate_model_version, import_piper_voice


@pytest.fixture
def worker_log(tmp_path: Path) -> Iterator[Path]:
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DATABASE_URL": servers.test_database_url(),
        "TTS_MODEL_LIFECYCLE": "true",
        "TTS_MODEL_POLL_SECONDS": "1",
        "LOG_LEVEL": "INFO",
        "LOG_FORMAT": "json",
        "PYTHONUNBUFFERED": "1",
    }
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "ttsplatform",
                "worker",
                "--pool",
                "prefork",
                "--concurrency",
                "1",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-Q",
                f"ops-lifecycle-{os.getpid()}",
            ],
            cwd=servers.ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_for_line(log: Path, text: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"{text!r} not logged:\n{log.read_text(errors='replace')[-3000:]}"
        time.sleep(0.2)


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_it_warms_and_follows_activations_in_a_worker(tmp_path: Path, worker_log: Path) -> None:
    v1, _ = make_joe()
    model, config = write_joe_copy(tmp_path)
    v2 = import_piper_voice(model, config, model_id=v1.model_id, voice_id="joe").model_version
    wait_for_line(worker_log, "model en_US-joe-medium v1 loaded and warmed")
    wait_for_line(worker_log, "model warm-up finished")

    activate_model_version(v2)
    wait_for_line(worker_log, "model en_US-joe-medium v2 loaded and warmed")
    wait_for_line(worker_log, f"model version {v1.pk} is no longer wanted here")
    # Workers log through the platform's LOGGING too: JSON lines.
    lines = [json.loads(line) for line in worker_log.read_text().splitlines() if line.startswith("{")]
    assert any(e["logger"] == "tts.catalogue.lifecycle" and "v2 loaded" in e["message"] for e in lines)
