"""`make run` on a fresh data directory: migrates, creates the demo, serves; the
printed curl line returns a playable file; a second run duplicates nothing."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.servers import free_port, wait_http

ROOT = Path(__file__).resolve().parent.parent.parent


def _make_run(var_dir: Path, port: int) -> tuple[subprocess.Popen[str], list[str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG",
                                                             "DJANGO_SETTINGS_MODULE", "ALLOWED_HOSTS")}
    env.update(VAR_DIR=str(var_dir), PORT=str(port), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(["make", "--no-print-directory", "run", f"PORT={port}"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: list[str] = []
    deadline = time.monotonic() + 180
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "Serving on" in line:
            break
    wait_http(f"http://127.0.0.1:{port}/healthz", timeout=60, proc=proc)
    return proc, lines


def _stop(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.slow
def test_make_run_serves_the_printed_curl(tmp_path: Path) -> None:
    port = free_port()
    proc, lines = _make_run(tmp_path / "var", port)
    try:
        output = "".join(lines)
        curl = next((line.strip() for line in lines if line.strip().startswith("curl ")), None)
        assert curl, output
        assert re.search(r"tts_[0-9a-f]{12}_", curl)
        args = shlex.split(curl)
        args[args.index("-o") + 1] = str(tmp_path / "hello.mp3")
        subprocess.run(args, check=True, timeout=120)
        data = (tmp_path / "hello.mp3").read_bytes()
        samples, rate = decode_audio(data, "mp3_44100_128")
        assert_speech(samples, rate, expected_rate=44100, text="Hello from your own speech server.")
    finally:
        _stop(proc)

    proc, lines = _make_run(tmp_path / "var", port)
    try:
        output = "".join(lines)
        assert "Demo tenant exists" in output and "curl " not in output
    finally:
        _stop(proc)
