"""Test helpers that look inside audio: decode a response and check it sounds like speech.

A test that only checks a status code proves little; these let every API and
service test assert that the bytes decode, at the promised rate, to a
plausible length of something that is not silence::

    samples, rate = decode_audio(response.content, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text="Hello there.")

Raw formats (pcm, ulaw, alaw) are decoded from what the format says; the rest
by soundfile (libsndfile), falling back to PyAV for what libsndfile cannot
read: ADTS AAC, and streamed FLAC whose header leaves the length unknown.
soundfile goes first because it honours Ogg/Opus' original rate (24 kHz
stays 24 kHz), where ffmpeg always decodes Opus at 48 kHz.
"""

from __future__ import annotations

import io

import av
import numpy as np
import soundfile as sf

from tts.audio import g711
from tts.audio.formats import (
    OutputFormat,
    UnknownFormatError,
    parse_elevenlabs_format,
    parse_openai_format,
)


def _as_format(fmt: OutputFormat | str) -> OutputFormat:
    if isinstance(fmt, OutputFormat):
        return fmt
    try:
        return parse_elevenlabs_format(fmt)
    except UnknownFormatError:
        return parse_openai_format(fmt)  # "pcm", "mp3", "aac": OpenAI names


def decode_with_pyav(data: bytes) -> tuple[np.ndarray, int]:
    with av.open(io.BytesIO(data), "r") as container:
        stream = container.streams.audio[0]
        rate = stream.codec_context.sample_rate
        to_mono = av.AudioResampler(format="flt", layout="mono", rate=rate)
        pieces = [out.to_ndarray().reshape(-1) for frame in container.decode(stream) for out in to_mono.resample(frame)]
        pieces += [out.to_ndarray().reshape(-1) for out in to_mono.resample(None)]
    samples = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
    return samples.astype(np.float32), rate


def decode_audio(data: bytes, fmt: OutputFormat | str) -> tuple[np.ndarray, int]:
    """Float32 mono samples and the sample rate of an encoded response."""
    fmt = _as_format(fmt)
    if fmt.is_raw:
        if fmt.codec == "ulaw":
            pcm = g711.ulaw2lin(data)
        elif fmt.codec == "alaw":
            pcm = g711.alaw2lin(data)
        else:
            assert len(data) % 2 == 0, f"odd byte count {len(data)} for s16le pcm"
            pcm = np.frombuffer(data, dtype="<i2")
        return pcm.astype(np.float32) / 32768.0, fmt.sample_rate
    if fmt.codec != "aac":
        try:
            samples, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
            return samples.mean(axis=1), int(rate)
        except (sf.LibsndfileError, ValueError, RuntimeError):
            pass  # e.g. flac with unknown length; PyAV copes
    return decode_with_pyav(data)


def frame_rms(samples: np.ndarray, rate: int, frame_ms: int = 20) -> np.ndarray:
    """RMS of consecutive frames (the tail shorter than a frame is dropped)."""
    size = max(1, rate * frame_ms // 1000)
    n = len(samples) // size
    frames = np.asarray(samples[: n * size], dtype=np.float64).reshape(n, size)
    return np.sqrt((frames**2).mean(axis=1))


EDGE_SLACK_S = 0.4


def assert_speech(
    samples: np.ndarray,
    rate: int,
    *,
    expected_rate: int | None = None,
    text: str | None = None,
    ms_per_char: float = 60,
    tolerance: float = 0.5,
    min_rms: float = 0.01,
    min_dynamic_range_db: float = 6.0,
) -> None:
    """Assert ``samples`` could be speech for ``text``: right rate, plausible length, not silence.

    Speech rises and falls between syllables and pauses, so besides an overall
    RMS floor the loud frames must stand ``min_dynamic_range_db`` above the
    quiet ones; a constant hum or steady noise fails that.
    """
    samples = np.asarray(samples)
    assert samples.ndim == 1, f"expected mono samples, got shape {samples.shape}"
    assert np.isfinite(samples).all(), "audio contains NaN or inf"
    if expected_rate is not None:
        assert rate == expected_rate, f"sample rate {rate}, expected {expected_rate}"
    duration = len(samples) / rate
    if text is not None:
        expected = len(text) * ms_per_char / 1000
        # Plus the silence at a sentence's edges and the sampled durations' spread, which a short
        # text cannot average out ("A second key works.", 19 characters, once took 1.72 s).
        low, high = expected * (1 - tolerance), expected * (1 + tolerance) + EDGE_SLACK_S
        assert low <= duration <= high, (
            f"{duration:.2f} s of audio for {len(text)} characters; expected {low:.2f}-{high:.2f} s"
        )
    assert duration > 0, "no audio"
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))
    assert rms >= min_rms, f"RMS {rms:.4f} below {min_rms}: silence?"
    frames = frame_rms(samples, rate)
    assert len(frames) >= 2, "too short to judge"
    loud, quiet = np.percentile(frames, [90, 10])
    spread_db = 20 * np.log10((loud + 1e-9) / (quiet + 1e-9))
    assert spread_db >= min_dynamic_range_db, (
        f"frame levels vary by only {spread_db:.1f} dB: a steady tone or noise, not speech"
    )
