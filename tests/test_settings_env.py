"""Settings come from the environment through helpers that fail loudly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from infra.env import env_bool, env_int, env_list, env_map, env_str

ROOT = Path(__file__).resolve().parent.parent


def test_it_reads_typed_values(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("X_INT", "7")
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_LIST", "a, b,,c")
    secret = tmp_path / "secret"
    secret.write_text("from-file\n")
    monkeypatch.setenv("X_SECRET_FILE", str(secret))
    assert env_int("X_INT", 1) == 7
    assert env_bool("X_BOOL", False) is True
    assert env_list("X_LIST", []) == ["a", "b", "c"]
    assert env_str("X_SECRET") == "from-file"


@pytest.mark.parametrize(
    ("name", "value", "call"),
    [
        ("X_INT", "seven", lambda: env_int("X_INT", 1)),
        ("X_INT", "0", lambda: env_int("X_INT", 1, minimum=1)),
        ("X_BOOL", "maybe", lambda: env_bool("X_BOOL", False)),
    ],
)
def test_it_fails_loudly_on_bad_values(monkeypatch: pytest.MonkeyPatch, name: str, value: str, call) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=name):
        call()


def _django_check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    dropped = ("SECRET_KEY", "DEBUG", "DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    clean = {k: v for k, v in os.environ.items() if k not in dropped}
    clean.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


def test_it_needs_a_secret_key_when_debug_is_off() -> None:
    result = _django_check({"DEBUG": "false"})
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_it_runs_with_embedded_defaults_in_debug() -> None:
    result = _django_check({"DEBUG": "true"})
    assert result.returncode == 0, result.stderr


def test_it_rejects_a_bad_engine_thread_count() -> None:
    result = _django_check({"DEBUG": "true", "TTS_ENGINE_THREADS": "lots"})
    assert result.returncode != 0 and "TTS_ENGINE_THREADS" in result.stderr


def test_a_map_setting_overrides_its_defaults_pair_by_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTS_X_MAP", "alloy=joe, nova = zf_xiaoxiao")
    assert env_map("TTS_X_MAP", {"alloy": "af_alloy", "echo": "am_echo"}) == {
        "alloy": "joe",
        "echo": "am_echo",
        "nova": "zf_xiaoxiao",
    }
    monkeypatch.setenv("TTS_X_MAP", "alloy")
    with pytest.raises(ImproperlyConfigured, match="TTS_X_MAP: 'alloy' is not a key=value pair"):
        env_map("TTS_X_MAP", {})


def test_production_commands_never_read_the_development_settings(tmp_path: Path) -> None:
    """A checkout that once ran ``make run`` has var/dev-settings (DEBUG, a secret): with
    DEV_SETTINGS=off, what make serve/worker/beat and every web process set, it is not read."""
    from ttsplatform.dev_settings import write_dev_settings

    write_dev_settings(tmp_path)
    assert _django_check({"VAR_DIR": str(tmp_path)}).returncode == 0  # manage.py in a shell: development
    refused = _django_check({"VAR_DIR": str(tmp_path), "DEV_SETTINGS": "off"})
    assert refused.returncode != 0 and "SECRET_KEY" in refused.stderr


@pytest.mark.parametrize(
    ("target", "commands"),
    # run: 5, and the Wyoming server in the background, which may not get to write before daphne ends.
    [("serve", 4), ("worker", 1), ("beat", 1), ("run", 5)],
)
def test_only_make_run_is_development(tmp_path: Path, target: str, commands: int) -> None:
    """Each make target's commands, run by stand-ins that write down the environment they got."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "env.log"
    for tool in ("python", "celery", "daphne"):
        shim = venv / "bin" / tool
        shim.write_text(f'#!/bin/sh\necho "$0 DEBUG=${{DEBUG-unset}} DEV_SETTINGS=${{DEV_SETTINGS-unset}}" >> {log}\n')
        shim.chmod(0o755)
    for stamp in (".installed", ".installed-dev"):
        (venv / stamp).touch()  # newer than pyproject.toml: nothing to install
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "DEV_SETTINGS", "SECRET_KEY", "MAKEFLAGS")}
    done = subprocess.run(
        ["make", "--no-print-directory", target, f"VENV={venv}", f"VAR_DIR={tmp_path / 'var'}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    assert len(lines) >= commands, lines
    if target == "run":
        assert all("DEBUG=true" in line and "DEV_SETTINGS=unset" in line for line in lines), lines
    else:
        assert all("DEBUG=unset" in line and "DEV_SETTINGS=off" in line for line in lines), lines


def test_every_web_process_of_the_supervisor_skips_the_development_settings() -> None:
    import socket

    from ttsplatform.serve import Supervisor

    with socket.socket() as sock:
        env = Supervisor([sock], 2).child_env(1)
    assert env["DEV_SETTINGS"] == "off" and env["WEB_PROCESS_INDEX"] == "1"


def _settings_of(env: dict[str, str], *names: str) -> dict[str, object]:
    wanted = ", ".join(repr(n) for n in names)
    code = (
        "import json; from django.conf import settings as s; "
        f"print(json.dumps({{n: getattr(s, n) for n in ({wanted},)}}))"
    )
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("SESSION_", "CSRF_", "SECURE_", "BEHIND_", "AUDIO_"))
    }
    full = {
        **base,
        "DJANGO_SETTINGS_MODULE": "ttsplatform.settings",
        "SECRET_KEY": "x" * 50,
        "DEV_SETTINGS": "off",
        **env,
    }
    result = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {code}"], cwd=ROOT, env=full,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    import json

    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def test_behind_a_tls_proxy_the_cookies_are_secure_and_hsts_is_sent() -> None:
    """#41 item 6: one documented setting for a TLS-terminating proxy; plain-http settings cannot undo it."""
    names = ("SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS", "SECURE_PROXY_SSL_HEADER")
    proxied = _settings_of(
        {"BEHIND_TLS_PROXY": "true", "SESSION_COOKIE_SECURE": "false", "CSRF_COOKIE_SECURE": "false"}, *names
    )
    assert proxied == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
    }
    plain = _settings_of({"SESSION_COOKIE_SECURE": "false", "CSRF_COOKIE_SECURE": "false"}, *names)
    assert plain["SECURE_HSTS_SECONDS"] == 0 and plain["SESSION_COOKIE_SECURE"] is False
    assert _settings_of({}, "SESSION_COOKIE_SECURE")["SESSION_COOKIE_SECURE"] is True  # production default


def test_the_audio_cache_may_have_a_bounded_redis_of_its_own() -> None:
    """#41 item 5: with AUDIO_CACHE_REDIS_URL, audio goes to its own alias; the limits stay on REDIS_URL."""
    seen = _settings_of(
        {"REDIS_URL": "redis://broker:6379/0", "AUDIO_CACHE_REDIS_URL": "redis://cache:6379/0"},
        "TTS_AUDIO_CACHE_ALIAS",
        "CACHES",
        "CELERY_BROKER_URL",
    )
    assert seen["TTS_AUDIO_CACHE_ALIAS"] == "audio"
    caches = seen["CACHES"]
    assert isinstance(caches, dict)
    assert caches["audio"]["LOCATION"] == "redis://cache:6379/0"
    assert caches["default"]["LOCATION"] == seen["CELERY_BROKER_URL"] == "redis://broker:6379/0"
    alone = _settings_of({"REDIS_URL": "redis://broker:6379/0"}, "TTS_AUDIO_CACHE_ALIAS")
    assert alone["TTS_AUDIO_CACHE_ALIAS"] == "default"


def test_each_web_process_sizes_its_engines_to_its_share_of_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """#41 item 2: two processes on two CPUs run one engine call each, on one ONNX thread each."""
    import socket

    from ttsplatform.serve import Supervisor

    monkeypatch.delenv("TTS_CPUS", raising=False)
    monkeypatch.setattr("ttsplatform.serve.available_cpus", lambda: 4)
    with socket.socket() as sock:
        assert Supervisor([sock], 2).child_env(0)["TTS_CPUS"] == "2"
        assert Supervisor([sock], 8).child_env(0)["TTS_CPUS"] == "1"
        monkeypatch.setenv("TTS_CPUS", "3")  # an operator's own figure stands
        assert Supervisor([sock], 2).child_env(0)["TTS_CPUS"] == "3"
