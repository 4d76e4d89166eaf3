"""The Wyoming server's key from a file (#41 item 6: compose mounts a secret, K8s a Secret volume,
and points ``TTS_WYOMING_API_KEY_FILE`` at it): the file is what the listener speaks with, and
without a usable key the server refuses to start before it listens or touches the database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(code_or_command: list[str], env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TTS_WYOMING_")}
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, *code_or_command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_listener_speaks_with_the_key_in_the_file(tmp_path: Path) -> None:
    key_file = tmp_path / "wyoming_api_key"
    key_file.write_text("tts_from-the-file\n")
    code = (
        "import django; django.setup(); from tts.wyoming.listeners import listeners_from_settings; "
        "[l] = listeners_from_settings(); print(l.api_key)"
    )
    result = _run(["-c", code], {"TTS_WYOMING_API_KEY_FILE": str(key_file)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "tts_from-the-file"


@pytest.mark.parametrize(
    ("key_file", "message"),
    [
        ("", "No API key for the Wyoming listener"),  # nothing set at all
        ("empty", "No API key for the Wyoming listener"),
        ("missing", "TTS_WYOMING_API_KEY_FILE="),  # the secret was not mounted
    ],
)
def test_it_refuses_to_start_without_a_key(tmp_path: Path, key_file: str, message: str) -> None:
    env: dict[str, str] = {}
    if key_file:
        path = tmp_path / key_file
        if key_file == "empty":
            path.write_text("\n")
        env["TTS_WYOMING_API_KEY_FILE"] = str(path)
    result = _run(["manage.py", "wyoming_server", "--port", "1"], env)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr[-2000:]
