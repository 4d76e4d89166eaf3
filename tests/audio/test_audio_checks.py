"""The shared audio assertions must pass speech-like audio and catch what is not."""

from __future__ import annotations

import numpy as np
import pytest

from tests.audio_checks import assert_speech, decode_audio
from tts.audio.encode import encode_all
from tts.audio.formats import parse_elevenlabs_format

RATE = 22050
TEXT = "Hello there, this is a test."  # 28 characters: ~1.7 s at 60 ms each


def speechlike(seconds: float, rate: int = RATE) -> np.ndarray:
    """Noise shaped into 4 Hz "syllables" with a pause in the middle."""
    rng = np.random.default_rng(3)
    t = np.arange(int(seconds * rate)) / rate
    envelope = np.clip(np.sin(2 * np.pi * 4 * t), 0, None)
    envelope[(t > seconds * 0.45) & (t < seconds * 0.55)] = 0
    return (0.3 * envelope * rng.standard_normal(len(t))).astype(np.float32)


def test_it_accepts_speechlike_audio() -> None:
    assert_speech(speechlike(1.7), RATE, expected_rate=RATE, text=TEXT)


def test_it_accepts_speechlike_audio_after_a_lossy_codec() -> None:
    data = encode_all(speechlike(1.7), RATE, parse_elevenlabs_format("mp3_44100_128"))
    samples, rate = decode_audio(data, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text=TEXT)


@pytest.mark.parametrize(
    ("samples", "kwargs", "message"),
    [
        (np.zeros(RATE * 2, np.float32), {}, "silence"),
        (0.5 * np.sin(np.arange(RATE * 2) * 0.1).astype(np.float32), {}, "steady tone"),
        (speechlike(5.0), {"text": TEXT}, "28 characters"),
        (speechlike(0.5), {"text": TEXT}, "28 characters"),
        (speechlike(1.7), {"expected_rate": 24000}, "expected 24000"),
        (np.full(RATE, np.nan, np.float32), {}, "NaN"),
    ],
    ids=["silence", "tone", "too-long", "too-short", "wrong-rate", "nan"],
)
def test_it_rejects_what_is_not_speech(samples: np.ndarray, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        assert_speech(samples, RATE, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["pcm_16000", "ulaw_8000", "alaw_8000", "mp3_22050_32", "opus_48000_64", "flac"])
def test_it_decodes_by_format_name(name: str) -> None:
    fmt = parse_elevenlabs_format(name)
    samples, rate = decode_audio(encode_all(speechlike(1.0), RATE, fmt), name)
    assert rate == (fmt.sample_rate or RATE)
    assert samples.dtype == np.float32 and samples.ndim == 1
    assert abs(len(samples) / rate - 1.0) < 0.1
