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
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=clean, capture_output=True,
                          text=True, timeout=120)


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
