"""A history item's audio in another format, its captions as WebVTT, and many items as a zip.

The stored file keeps the format the client asked for; the dashboard offers
it in others by decoding and re-encoding it. Captions come from the
character alignment that the with-timestamps endpoints store. A download of
several items is a zip written while it is sent (``history_archive_chunks``):
at most one read buffer of it is in memory, and its total size is bounded by
``TTS_HISTORY_DOWNLOAD_MAX_BYTES`` before the first byte goes out.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import av
import numpy as np
import soundfile as sf
from django.conf import settings

from tts.audio import g711
from tts.audio.encode import encode_all
from tts.audio.formats import (
    ELEVENLABS_FORMATS,
    OutputFormat,
    UnknownFormatError,
    parse_elevenlabs_format,
    parse_openai_format,
)
from tts.errors import SynthesisError
from tts.models import SynthesisRecord

# What the dashboard offers; each name is an ElevenLabs output_format.
DOWNLOAD_FORMATS: dict[str, str] = {
    "mp3_44100_128": "MP3 (44.1 kHz, 128 kbps)",
    "wav_22050": "WAV (22.05 kHz)",
    "flac_22050": "FLAC (22.05 kHz)",
    "opus_48000_64": "Ogg Opus (48 kHz, 64 kbps)",
}


class ExportError(SynthesisError):
    """An item that cannot be exported as asked; ``field`` names what is at fault."""

    def __init__(self, message: str, *, field: str, status: int = 400, code: str = "export_failed") -> None:
        super().__init__(message, code=code, status=status, field=field)


# --- many items as one zip, streamed --------------------------------------------

_READ_BYTES = 64 * 1024


class _ZipSink(io.RawIOBase):
    """Where zipfile writes: keeps what it was given until the stream takes it (never seekable)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._position = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        self._position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._position

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts = []
        return data


def history_archive_size(records: Sequence[SynthesisRecord]) -> int:
    """Bytes of stored audio the zip of ``records`` would hold; ``ExportError`` (413) past the bound."""
    total = sum(record.audio.size for record in records if record.audio)
    limit = settings.TTS_HISTORY_DOWNLOAD_MAX_BYTES
    if limit and total > limit:
        raise ExportError(
            f"These items hold {total} bytes of audio; one download may hold at most {limit} "
            "(TTS_HISTORY_DOWNLOAD_MAX_BYTES). Download fewer at a time.",
            field="history_item_ids",
            status=413,
            code="download_too_large",
        )
    return total


def history_archive_chunks(records: Sequence[SynthesisRecord]) -> Iterator[bytes]:
    """The zip (stored, not compressed: audio is compressed already) of the records' audio,
    piece by piece as it is written; items without stored audio are left out."""
    sink = _ZipSink()
    with zipfile.ZipFile(sink, "w", zipfile.ZIP_STORED) as archive:
        for record in records:
            if not record.audio:
                continue
            ext = str(record.audio.name).rsplit(".", 1)[-1]
            size = record.audio.size
            with (
                record.audio.open("rb") as source,
                archive.open(f"{record.pk}.{ext}", "w", force_zip64=size >= zipfile.ZIP64_LIMIT) as entry,
            ):
                while block := source.read(_READ_BYTES):
                    entry.write(block)
                    if data := sink.take():
                        yield data
            if data := sink.take():
                yield data
    if data := sink.take():
        yield data  # the central directory


def _decode(data: bytes, fmt: OutputFormat) -> tuple[np.ndarray, int]:
    if fmt.is_raw:
        if fmt.codec == "ulaw":
            pcm = g711.ulaw2lin(data)
        elif fmt.codec == "alaw":
            pcm = g711.alaw2lin(data)
        else:
            pcm = np.frombuffer(data[: len(data) // 2 * 2], dtype="<i2")
        return pcm.astype(np.float32) / 32768.0, fmt.sample_rate
    if fmt.codec != "aac":
        try:
            samples, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
            return samples.mean(axis=1), int(rate)
        except (sf.LibsndfileError, ValueError, RuntimeError):
            pass  # e.g. a streamed flac without a length; PyAV reads it
    with av.open(io.BytesIO(data), "r") as container:
        stream = container.streams.audio[0]
        rate = stream.codec_context.sample_rate
        to_mono = av.AudioResampler(format="flt", layout="mono", rate=rate)
        pieces = [out.to_ndarray().reshape(-1) for frame in container.decode(stream) for out in to_mono.resample(frame)]
        pieces += [out.to_ndarray().reshape(-1) for out in to_mono.resample(None)]
    samples = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
    return samples.astype(np.float32), int(rate)


def _stored_format(record: SynthesisRecord) -> OutputFormat:
    """The format the item was delivered in; OpenAI requests store OpenAI's names ("mp3", "pcm")."""
    try:
        return parse_elevenlabs_format(record.output_format)
    except UnknownFormatError:
        try:
            return parse_openai_format(record.output_format)
        except UnknownFormatError as exc:
            raise ExportError(f"Unknown stored format '{record.output_format}'.", field="item") from exc


def _read(record: SynthesisRecord) -> bytes:
    if not record.audio:
        raise ExportError("This item has no stored audio (logging was off or it did not finish).", field="item")
    with record.audio.open("rb") as fh:
        return fh.read()


def _decode_stored(record: SynthesisRecord) -> tuple[np.ndarray, int]:
    fmt = _stored_format(record)
    if fmt.is_raw and record.sample_rate:
        # Raw bytes carry no header: the record knows the rate they were delivered at.
        fmt = replace(fmt, sample_rate=record.sample_rate)
    return _decode(_read(record), fmt)


def export_audio(record: SynthesisRecord, format_name: str) -> tuple[bytes, OutputFormat]:
    """The stored audio of ``record`` as ``format_name`` (one of DOWNLOAD_FORMATS, or its own)."""
    if format_name == record.output_format:
        return _read(record), _stored_format(record)
    if format_name not in DOWNLOAD_FORMATS:
        allowed = ", ".join(DOWNLOAD_FORMATS)
        raise ExportError(f"format: '{format_name}' is not offered; choose one of {allowed}.", field="format")
    target = parse_elevenlabs_format(format_name)
    samples, rate = _decode_stored(record)
    return encode_all(samples, rate, target), target


def stored_audio_is_raw(record: SynthesisRecord) -> bool:
    """Headerless bytes (pcm, ulaw, alaw) that players cannot open as they are."""
    try:
        return _stored_format(record).is_raw
    except ExportError:
        return False


def playable_audio(record: SynthesisRecord) -> tuple[bytes, OutputFormat] | None:
    """WAV for raw items (pcm, ulaw, alaw), which an <audio> element cannot play; None for the rest."""
    fmt = _stored_format(record)
    if not fmt.is_raw:
        return None
    rate = record.sample_rate or fmt.sample_rate
    target = parse_elevenlabs_format(f"wav_{rate}" if f"wav_{rate}" in ELEVENLABS_FORMATS else "wav_22050")
    samples, in_rate = _decode_stored(record)
    return encode_all(samples, in_rate, target), target


def _timestamp(seconds: float, separator: str = ".") -> str:
    ms = max(0, round(seconds * 1000))
    hours, ms = divmod(ms, 3_600_000)
    minutes, ms = divmod(ms, 60_000)
    secs, ms = divmod(ms, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{ms:03d}"


def caption_track(alignment: dict[str, Any] | None) -> dict[str, Any] | None:
    """The character track captions are made from: a record stores ``{"alignment": ...,
    "normalized_alignment": ...}``; the original text's track is what viewers read."""
    if not alignment:
        return None
    if "characters" not in alignment:
        return alignment.get("alignment") or alignment.get("normalized_alignment")
    return alignment


def caption_cues(alignment: dict[str, Any] | None, *, max_chars: int = 42) -> list[tuple[float, float, str]]:
    """(start, end, text) cues of up to ``max_chars`` characters, broken at spaces."""
    track = caption_track(alignment)
    if not track:
        return []
    chars = track.get("characters") or []
    starts = track.get("character_start_times_seconds") or []
    ends = track.get("character_end_times_seconds") or []
    n = min(len(chars), len(starts), len(ends))
    cues: list[tuple[float, float, str]] = []
    text, begin, last_end = "", None, 0.0
    for i in range(n):
        char = str(chars[i])
        if begin is None:
            if not char.strip():
                continue
            begin = float(starts[i])
        text += char
        last_end = float(ends[i])
        if (char.isspace() and len(text) >= max_chars) or i == n - 1:
            # A line break inside a cue's text would end the cue early in both formats.
            line = " ".join(text.split())
            if line:
                cues.append((begin, max(begin, last_end), line))
            text, begin = "", None
    return cues


def captions_vtt(alignment: dict[str, Any] | None, *, max_chars: int = 42) -> str | None:
    """WebVTT cues of up to ``max_chars`` characters, broken at spaces; None without timestamps."""
    cues = caption_cues(alignment, max_chars=max_chars)
    if not cues:
        return None
    body = [f"{_timestamp(a)} --> {_timestamp(b)}\n{line.replace('-->', '->')}" for a, b, line in cues]
    return "WEBVTT\n\n" + "\n\n".join(body) + "\n"


def captions_srt(alignment: dict[str, Any] | None, *, max_chars: int = 42) -> str | None:
    """SubRip (SRT) cues, numbered from 1; None without timestamps."""
    cues = caption_cues(alignment, max_chars=max_chars)
    if not cues:
        return None
    body = [
        f"{i}\n{_timestamp(a, ',')} --> {_timestamp(b, ',')}\n{line}" for i, (a, b, line) in enumerate(cues, start=1)
    ]
    return "\n\n".join(body) + "\n"
