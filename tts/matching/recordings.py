"""The uploaded recording: checked, decoded with bounded memory, stored, and deleted on time.

A file is read by what its bytes are, not its name: WAV, FLAC, OGG and MP3 through libsndfile
(``soundfile``), M4A (MP4 audio) through PyAV. Its length is read from its header before it is
decoded where the format says it (every one but a headerless stream), and decoding stops at what
the remaining allowance of ``TTS_MATCH_MAX_TOTAL_SECONDS`` could hold, so a file that lies about
its length costs no more. Each file becomes 16 kHz mono (what the encoders take) and is stored as
a 16-bit WAV under ``MEDIA_ROOT/voice-matches/<match id>/`` until ``TTS_MATCH_RECORDING_RETENTION_S``
has passed (``recordings_purge``); its embedding is what stays.
"""

from __future__ import annotations

import io
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import soundfile as sf
import soxr
from django.conf import settings

from tts.errors import SynthesisError
from tts.matching.encoders import ENCODER_RATE

FORMATS = ("WAV", "MP3", "FLAC", "OGG", "M4A")
_BLOCK = 65_536
SILENCE_DBFS = -50.0


class RecordingError(SynthesisError):
    """A file of the recording cannot be used; the message names it."""

    def __init__(self, message: str, *, field: str = "files", status: int = 400, code: str = "invalid_recording"):
        super().__init__(message, code=code, status=status, field=field)


@dataclass
class DecodedFile:
    name: str
    samples: np.ndarray  # float32 mono at ENCODER_RATE

    @property
    def seconds(self) -> float:
        return len(self.samples) / ENCODER_RATE


def sniff_format(head: bytes) -> str | None:
    """What the first bytes of a file say it is, among ``FORMATS``; None for anything else."""
    if head[:4] in (b"RIFF", b"RF64") and head[8:12] == b"WAVE":
        return "WAV"
    if head[:4] == b"fLaC":
        return "FLAC"
    if head[:4] == b"OggS":
        return "OGG"
    if head[4:8] == b"ftyp":
        return "M4A"
    if head[:3] == b"ID3" or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "MP3"
    return None


def _mono(block: np.ndarray) -> np.ndarray:
    return block.mean(axis=1) if block.ndim == 2 else block


def _decode_soundfile(fh: IO[bytes], name: str, allowance: float) -> tuple[np.ndarray, int]:
    with sf.SoundFile(fh) as audio:
        rate = int(audio.samplerate)
        if audio.frames > 0 and audio.frames / rate > allowance:  # the header's length, before decoding
            raise RecordingError(_too_long(name, audio.frames / rate))
        cap = int(allowance * rate) + 1
        blocks, total = [], 0
        for block in audio.blocks(blocksize=_BLOCK, dtype="float32", always_2d=True):
            blocks.append(_mono(block))
            total += len(block)
            if total > cap:
                raise RecordingError(_too_long(name, total / rate))
    return (np.concatenate(blocks) if blocks else np.zeros(0, np.float32)), rate


def _decode_m4a(fh: IO[bytes], name: str, allowance: float) -> tuple[np.ndarray, int]:
    import av

    with av.open(fh, mode="r") as container:
        if not container.streams.audio:
            raise RecordingError(f"files: '{name}' holds no audio stream.")
        stream = container.streams.audio[0]
        if container.duration is not None and container.duration / 1_000_000 > allowance:
            raise RecordingError(_too_long(name, container.duration / 1_000_000))
        rate = int(stream.rate or stream.codec_context.sample_rate)
        cap = int(allowance * rate) + 1
        resampler = av.AudioResampler(format="flt", layout="mono", rate=rate)
        blocks, total = [], 0
        for frame in container.decode(stream):
            for out in resampler.resample(frame):
                block = out.to_ndarray().reshape(-1).astype(np.float32)
                blocks.append(block)
                total += len(block)
            if total > cap:
                raise RecordingError(_too_long(name, total / rate))
    return (np.concatenate(blocks) if blocks else np.zeros(0, np.float32)), rate


def _too_long(name: str, seconds: float) -> str:
    limit = float(settings.TTS_MATCH_MAX_TOTAL_SECONDS)
    return f"files: '{name}' is too long ({seconds:.1f} s); all files together may hold at most {limit:g} seconds."


def speech_seconds(samples: np.ndarray, *, frame: int = 480, floor_dbfs: float = SILENCE_DBFS) -> float:
    """Seconds of 30 ms frames louder than ``floor_dbfs`` (16 kHz samples)."""
    n = len(samples) // frame
    if n == 0:
        return 0.0
    rms = np.sqrt(np.mean(samples[: n * frame].reshape(n, frame).astype(np.float64) ** 2, axis=1)) + 1e-12
    return float(np.count_nonzero(20 * np.log10(rms) > floor_dbfs) * frame / ENCODER_RATE)


def decode_file(fh: IO[bytes], name: str, *, size: int, allowance: float) -> DecodedFile:
    """One uploaded file as 16 kHz mono, or ``RecordingError`` naming it (format, size, length, silence)."""
    if size > settings.TTS_MATCH_MAX_FILE_BYTES:
        raise RecordingError(
            f"files: '{name}' is {size} bytes; each file may have at most {settings.TTS_MATCH_MAX_FILE_BYTES}."
        )
    head = fh.read(16)
    fh.seek(0)
    kind = sniff_format(head)
    if kind is None:
        raise RecordingError(f"files: '{name}' is not audio this server reads ({', '.join(FORMATS)}).")
    try:
        samples, rate = (_decode_m4a if kind == "M4A" else _decode_soundfile)(fh, name, allowance)
    except RecordingError:
        raise
    except Exception as exc:  # libsndfile and FFmpeg say "cannot decode" in many ways
        raise RecordingError(f"files: '{name}' could not be decoded as {kind}: {exc}") from exc
    if rate != ENCODER_RATE and len(samples):
        samples = np.asarray(soxr.resample(samples, rate, ENCODER_RATE), dtype=np.float32)
    samples = np.clip(np.nan_to_num(samples), -1.0, 1.0).astype(np.float32)
    if not len(samples) or float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) < 10 ** (SILENCE_DBFS / 20):
        raise RecordingError(f"files: '{name}' is silent.")
    spoken = speech_seconds(samples)
    if spoken < settings.TTS_MATCH_MIN_SPEECH_SECONDS:
        raise RecordingError(
            f"files: '{name}' is too short: {spoken:.1f} s of speech, at least "
            f"{settings.TTS_MATCH_MIN_SPEECH_SECONDS:g} s are needed."
        )
    return DecodedFile(name=name, samples=samples)


def decode_uploads(files: list[tuple[str, IO[bytes], int]]) -> list[DecodedFile]:
    """Every uploaded ``(name, file, size)``, checked and decoded within the total allowance."""
    if not files:
        raise RecordingError("files: send 1 or more audio files of the voice.")
    if len(files) > settings.TTS_MATCH_MAX_FILES:
        raise RecordingError(f"files: at most {settings.TTS_MATCH_MAX_FILES} files; got {len(files)}.")
    decoded: list[DecodedFile] = []
    left = float(settings.TTS_MATCH_MAX_TOTAL_SECONDS)
    for name, fh, size in files:
        one = decode_file(fh, name or "file", size=size, allowance=left)
        decoded.append(one)
        left -= one.seconds
        if left < 0:
            raise RecordingError(_too_long(name, one.seconds))
    return decoded


def recording_dir(match_id: object) -> Path:
    return Path(settings.MEDIA_ROOT) / "voice-matches" / str(match_id)


def recording_store(match_id: object, decoded: list[DecodedFile]) -> tuple[str, list[str]]:
    """Write the decoded files (16-bit WAV); the folder (relative to MEDIA_ROOT) and file names."""
    folder = recording_dir(match_id)
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for i, one in enumerate(decoded):
        name = f"recording-{i:02d}.wav"
        sf.write(folder / name, one.samples, ENCODER_RATE, subtype="PCM_16")
        names.append(name)
    return str(folder.relative_to(Path(settings.MEDIA_ROOT))), names


def recording_load(relative: str, names: list[str]) -> list[np.ndarray]:
    folder = Path(settings.MEDIA_ROOT) / relative
    return [sf.read(folder / name, dtype="float32")[0] for name in names]


def recording_delete(relative: str) -> None:
    if relative:
        shutil.rmtree(Path(settings.MEDIA_ROOT) / relative, ignore_errors=True)


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    """A 16-bit WAV of ``samples`` (tests and the bench make recordings with it)."""
    out = io.BytesIO()
    sf.write(out, samples, rate, format="WAV", subtype="PCM_16")
    return out.getvalue()
