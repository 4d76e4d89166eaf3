"""`make run` on a fresh data directory: migrates, creates the demo, serves; the
printed curl line returns a playable file; a second run duplicates nothing."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from wyoming.audio import AudioChunk, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from tests.audio_checks import assert_speech, decode_audio
from tests.servers import free_port, wait_http

ROOT = Path(__file__).resolve().parent.parent.parent


def bare_env(var_dir: Path) -> dict[str, str]:
    """A new user's shell: PATH, HOME and locale only, plus the test's own data dir."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER")}
    env["VAR_DIR"] = str(var_dir)
    return env


def make_run(var_dir: Path, port: int, wyoming_port: int = 0) -> tuple[subprocess.Popen[str], list[str]]:
    env = bare_env(var_dir)
    env.update(PORT=str(port), PYTHONUNBUFFERED="1")
    wyoming_port = wyoming_port or free_port()
    args = ["make", "--no-print-directory", "run", f"PORT={port}", f"WYOMING_PORT={wyoming_port}"]
    proc = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
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


def stop(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


async def wyoming_says(port: int, text: str) -> tuple[np.ndarray, int]:
    """The demo tenant's voice over the Wyoming server make run started beside daphne."""
    deadline = time.monotonic() + 60
    while True:
        try:
            client = AsyncTcpClient("127.0.0.1", port, read_timeout=60)
            await client.connect()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    try:
        await client.write_event(Synthesize(text=text).event())
        audio, rate = b"", 0
        while (event := await client.read_event()) is not None and not AudioStop.is_type(event.type):
            if AudioChunk.is_type(event.type):
                chunk = AudioChunk.from_event(event)
                audio, rate = audio + chunk.audio, chunk.rate
    finally:
        await client.disconnect()
    return np.frombuffer(audio, dtype="<i2").astype(np.float32) / 32768.0, rate


@pytest.mark.slow
def test_make_run_serves_the_printed_curl_and_the_readme_lines_work(tmp_path: Path) -> None:
    """One ``make run`` on a fresh data dir serves the printed curl line and Wyoming, and every
    ``manage.py`` line of the README works beside it (tests/integration/test_readme_commands.py); a
    second run duplicates nothing. One server for both: each ``make run`` migrates a new database
    and warms its engines (about 15 s of CPU)."""
    from tests.integration.test_readme_commands import check_import_voice, check_readme_lines_beside

    var_dir = tmp_path / "var"
    port, wyoming_port = free_port(), free_port()
    proc, lines = make_run(var_dir, port, wyoming_port)
    try:
        output = "".join(lines)
        curl = next((line.strip() for line in lines if line.strip().startswith("curl ")), None)
        assert curl, output
        assert re.search(r"tts_[0-9a-f]{12}_", curl)
        assert f"Wyoming (Home Assistant): 127.0.0.1:{wyoming_port} speaks for the demo tenant" in output
        args = shlex.split(curl)
        args[args.index("-o") + 1] = str(tmp_path / "hello.mp3")
        subprocess.run(args, check=True, timeout=120)
        data = (tmp_path / "hello.mp3").read_bytes()
        samples, rate = decode_audio(data, "mp3_44100_128")
        assert_speech(samples, rate, expected_rate=44100, text="Hello from your own speech server.")
        samples, rate = asyncio.run(wyoming_says(wyoming_port, "Hello from Home Assistant."))
        assert_speech(samples, rate, expected_rate=22050, text="Hello from Home Assistant.")
        check_readme_lines_beside(var_dir, port, lines)
    finally:
        stop(proc)

    proc, lines = make_run(var_dir, port)
    try:
        output = "".join(lines)
        assert "Demo tenant exists" in output and "curl " not in output
    finally:
        stop(proc)
    # Last: it activates joe on the PyTorch engine, which a later make run would load.
    check_import_voice(var_dir)


def test_a_first_make_run_says_what_it_installs(tmp_path: Path) -> None:
    """On a bare machine the install takes minutes: each step is announced and pip is not silenced."""
    result = subprocess.run(
        ["make", "-n", "--no-print-directory", "run", f"VENV={tmp_path}/venv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    pip = [n for n, line in enumerate(lines) if "pip install" in line]
    assert pip and all(" -q" not in lines[n] and "--quiet" not in lines[n] for n in pip), lines
    announced = [n for n, line in enumerate(lines) if line.startswith("echo") and "==>" in line]
    assert announced and announced[0] < pip[0], "a line says what is about to happen before pip starts"
    assert any("Installing the platform" in lines[n] for n in announced)
    assert lines.index(f"{tmp_path}/venv/bin/python -m ttsplatform.dev_settings") > pip[-1]
