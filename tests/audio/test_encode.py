"""Streaming resampler and encoders, checked by decoding what they produce.

Signals are synthetic (tones, sweeps, noise) so no engine is needed. The
engine's rate in these tests is 22050 Hz, the default voice's.
"""

from __future__ import annotations

import io
import itertools
import struct
import warnings

import numpy as np
import pytest
import soundfile as sf
import soxr

from tests.audio_checks import decode_audio, decode_with_pyav
from tts.audio import g711
from tts.audio.encode import StreamEncoder, encode_all, make_encoder
from tts.audio.formats import (
    ELEVENLABS_FORMATS,
    OPENAI_FORMATS,
    OutputFormat,
    parse_elevenlabs_format,
    parse_openai_format,
)
from tts.audio.resample import StreamResampler

MODEL_RATE = 22050

FORMATS: list[OutputFormat] = [parse_elevenlabs_format(n) for n in ELEVENLABS_FORMATS] + [
    parse_openai_format(n) for n in OPENAI_FORMATS
]
FORMAT_IDS = [f"elevenlabs:{n}" for n in ELEVENLABS_FORMATS] + [f"openai:{n}" for n in OPENAI_FORMATS]
STREAMING_FORMATS = [f for f in FORMATS if f.codec in ("mp3", "opus")]


def tone(seconds: float, freq: float = 440.0, rate: int = MODEL_RATE) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def sweep(seconds: float, rate: int = MODEL_RATE) -> np.ndarray:
    """A linear chirp 100 Hz -> 8 kHz: every frequency band crosses some join."""
    t = np.arange(int(seconds * rate)) / rate
    f0, f1 = 100.0, 8000.0
    phase = 2 * np.pi * (f0 * t + (f1 - f0) * t**2 / (2 * seconds))
    return (0.6 * np.sin(phase)).astype(np.float32)


def uneven_pieces(x: np.ndarray, seed: int = 7) -> list[np.ndarray]:
    """Pieces of awkward sizes, empty and one-sample pieces included."""
    rng = np.random.default_rng(seed)
    cuts = {0, 1, 2, len(x)} | set(rng.integers(0, len(x), 12).tolist())
    bounds = sorted(cuts)
    pieces = [x[a:b] for a, b in itertools.pairwise(bounds)]
    return [x[:0], *pieces[:3], x[:0], *pieces[3:]]


def stream(encoder: StreamEncoder, pieces: list[np.ndarray]) -> bytes:
    return b"".join(encoder.feed(p) for p in pieces) + encoder.finish()


# --- resampling ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "dst"), [(22050, 24000), (22050, 44100), (22050, 8000), (22050, 48000), (24000, 16000)]
)
def test_it_resamples_in_pieces_like_one_shot(src: int, dst: int) -> None:
    x = sweep(1.0, src)
    resampler = StreamResampler(src, dst)
    streamed = np.concatenate([resampler.process(p) for p in uneven_pieces(x)] + [resampler.flush()])
    whole = soxr.resample(x, src, dst, quality="HQ")
    assert streamed.dtype == np.float32
    assert len(streamed) == len(whole)
    assert np.abs(streamed - whole).max() < 1e-6


def test_it_has_no_clicks_where_pieces_join() -> None:
    x = sweep(1.0)
    pieces = uneven_pieces(x)
    resampler = StreamResampler(MODEL_RATE, 44100)
    streamed = np.concatenate([resampler.process(p) for p in pieces] + [resampler.flush()])
    whole = soxr.resample(x, MODEL_RATE, 44100)
    # The step between neighbouring samples never exceeds the one-shot signal's.
    assert np.abs(np.diff(streamed)).max() <= np.abs(np.diff(whole)).max() + 1e-6
    # And the check bites: resampling each piece on its own does click.
    naive = np.concatenate([soxr.resample(p, MODEL_RATE, 44100) for p in pieces if len(p)])
    assert len(naive) != len(whole) or np.abs(naive - whole).max() > 0.05


def test_it_passes_samples_through_at_equal_rates() -> None:
    x = sweep(0.2)
    resampler = StreamResampler(MODEL_RATE, MODEL_RATE)
    assert resampler.is_identity
    assert np.array_equal(resampler.process(x.astype(np.float64)), x)
    assert len(resampler.flush()) == 0


def test_it_refuses_to_process_after_flush() -> None:
    resampler = StreamResampler(MODEL_RATE, 24000)
    resampler.process(tone(0.1))
    resampler.flush()
    assert len(resampler.flush()) == 0
    with pytest.raises(RuntimeError):
        resampler.process(tone(0.1))


# --- every format ---------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_it_encodes_every_format(fmt: OutputFormat) -> None:
    x = tone(1.5)
    rate = make_encoder(fmt, MODEL_RATE).format.sample_rate
    samples, decoded_rate = decode_audio(encode_all(x, MODEL_RATE, fmt), fmt.name)
    assert decoded_rate == rate
    # Lossy codecs pad (encoder delay, last frame): at most ~80 ms here.
    assert 1.5 - 0.001 <= len(samples) / decoded_rate <= 1.5 + 0.1
    spectrum = np.abs(np.fft.rfft(samples))
    assert np.argmax(spectrum) * decoded_rate / len(samples) == pytest.approx(440, abs=2)
    rms = np.sqrt(np.mean(samples[: int(1.4 * decoded_rate)] ** 2))
    assert rms == pytest.approx(0.5 / np.sqrt(2), rel=0.1)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_it_streams_the_same_bytes_in_pieces(fmt: OutputFormat) -> None:
    x = sweep(1.2)
    whole = encode_all(x, MODEL_RATE, fmt)
    encoder = make_encoder(fmt, MODEL_RATE)
    streamed = stream(encoder, uneven_pieces(x))
    if fmt.codec == "wav":
        # Only the length fields of the header differ; seal() fills them in.
        assert streamed != whole
        assert encoder.seal(streamed) == whole
        a, _ = decode_audio(streamed, fmt)
        b, _ = decode_audio(whole, fmt)
        assert np.array_equal(a, b)
    else:
        assert streamed == whole


@pytest.mark.parametrize("fmt", STREAMING_FORMATS, ids=lambda f: f.name)
def test_it_gets_first_audio_out_early(fmt: OutputFormat) -> None:
    """Fed 20 ms at a time, the bytes out so far decode to audio by 250 ms in."""
    x = tone(0.5)
    step = MODEL_RATE // 50
    out = b""
    with make_encoder(fmt, MODEL_RATE) as encoder:
        for start in range(0, int(0.25 * MODEL_RATE), step):
            out += encoder.feed(x[start : start + step])
            if out and _decodes_to_audio(out, fmt):
                return
    pytest.fail(f"no decodable audio after 250 ms fed ({len(out)} bytes out)")


def _decodes_to_audio(data: bytes, fmt: OutputFormat) -> bool:
    try:
        samples, _ = decode_audio(data, fmt)
    except Exception:  # a stream cut mid-page may not parse yet
        return False
    return len(samples) > 0


# --- per codec ---------------------------------------------------------------


@pytest.mark.parametrize(("name", "bytes_per_sample"), [("pcm_22050", 2), ("wav_22050", 2)])
def test_it_returns_uncompressed_bytes_at_once(name: str, bytes_per_sample: int) -> None:
    encoder = make_encoder(parse_elevenlabs_format(name), MODEL_RATE)
    first = encoder.feed(tone(0.1))
    header = 44 if name.startswith("wav") else 0
    assert len(first) == header + int(0.1 * MODEL_RATE) * bytes_per_sample
    assert len(encoder.feed(tone(0.05))) == int(0.05 * MODEL_RATE) * bytes_per_sample
    encoder.close()


@pytest.mark.parametrize("name", ["ulaw_8000", "alaw_8000"])
def test_it_encodes_g711_at_8khz(name: str) -> None:
    fmt = parse_elevenlabs_format(name)
    x = tone(1.0)
    data = encode_all(x, MODEL_RATE, fmt)
    assert len(data) == 8000  # one byte per sample at 8 kHz
    samples, _ = decode_audio(data, fmt)
    reference = soxr.resample(x, MODEL_RATE, 8000)
    # G.711 keeps ~2-3 % of the sample's magnitude.
    assert np.abs(samples - reference).max() < 0.02


def test_it_writes_a_wav_header_that_streams() -> None:
    fmt = parse_elevenlabs_format("wav_22050")
    encoder = make_encoder(fmt, MODEL_RATE)
    streamed = stream(encoder, [tone(0.3), tone(0.2)])
    assert streamed[:4] == b"RIFF" and streamed[8:16] == b"WAVEfmt "
    assert struct.unpack("<I", streamed[4:8])[0] == 0xFFFFFFFF
    assert struct.unpack("<I", streamed[40:44])[0] == 0xFFFFFFFF
    for decode in (_read_with_soundfile, _read_with_pyav):
        samples = decode(streamed)
        assert len(samples) == int(0.5 * MODEL_RATE)
    sealed = encode_all(np.concatenate([tone(0.3), tone(0.2)]), MODEL_RATE, fmt)
    assert struct.unpack("<I", sealed[4:8])[0] == len(sealed) - 8
    assert struct.unpack("<I", sealed[40:44])[0] == len(sealed) - 44


def _read_with_soundfile(data: bytes) -> np.ndarray:
    samples, _ = sf.read(io.BytesIO(data), dtype="float32")
    return samples


def _read_with_pyav(data: bytes) -> np.ndarray:
    return decode_with_pyav(data)[0]


@pytest.mark.parametrize("name", ["flac_22050", "flac_44100", "flac"])
def test_it_hands_flac_out_whole_with_its_length(name: str) -> None:
    """A streamed FLAC cannot know its length, which libsndfile needs in STREAMINFO: the whole
    file comes out of finish(), sealed, and every reader opens it."""
    encoder = make_encoder(parse_elevenlabs_format(name), MODEL_RATE)
    assert encoder.feed(tone(0.3)) == b"" and encoder.feed(tone(0.2)) == b""
    data = encoder.finish()
    rate = encoder.format.sample_rate
    info = sf.info(io.BytesIO(data))
    assert (info.samplerate, info.frames) == (rate, int(0.5 * rate))
    assert len(_read_with_soundfile(data)) == len(_read_with_pyav(data)) == int(0.5 * rate)
    assert encoder.seal(data) == data


def test_it_streams_flac_into_a_seekable_file_and_seals_it() -> None:
    fmt = parse_elevenlabs_format("flac_22050")
    encoder = make_encoder(fmt, MODEL_RATE, seekable_output=True)
    first = encoder.feed(tone(0.3))
    assert first.startswith(b"fLaC"), "bytes come out as they are encoded"
    streamed = first + encoder.feed(tone(0.2)) + encoder.finish()
    # STREAMINFO says 0 samples ("unknown"): libsndfile refuses it, ffmpeg reads it.
    with pytest.raises(ValueError, match="too big"):
        sf.read(io.BytesIO(streamed))
    assert len(_read_with_pyav(streamed)) == int(0.5 * MODEL_RATE)
    info = sf.info(io.BytesIO(encoder.seal(streamed)))
    assert (info.samplerate, info.frames) == (MODEL_RATE, int(0.5 * MODEL_RATE))


def test_it_matches_audioop_g711() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        audioop = pytest.importorskip("audioop")  # gone in Python 3.13
    every = np.arange(-32768, 32768, dtype=np.int16)
    raw = every.astype("<i2").tobytes()
    assert g711.lin2ulaw(every) == audioop.lin2ulaw(raw, 2)
    assert g711.lin2alaw(every) == audioop.lin2alaw(raw, 2)
    codes = bytes(range(256))
    assert g711.ulaw2lin(codes).astype("<i2").tobytes() == audioop.ulaw2lin(codes, 2)
    assert g711.alaw2lin(codes).astype("<i2").tobytes() == audioop.alaw2lin(codes, 2)


# --- life cycle and input ---------------------------------------------------------


@pytest.mark.parametrize("name", ["mp3", "opus", "aac", "flac", "wav", "pcm"])
def test_it_can_be_abandoned_at_any_point(name: str) -> None:
    fmt = parse_openai_format(name)
    make_encoder(fmt, MODEL_RATE).close()  # before any audio
    encoder = make_encoder(fmt, MODEL_RATE)
    encoder.feed(tone(0.3))
    encoder.close()
    encoder.close()
    with pytest.raises(RuntimeError):
        encoder.feed(tone(0.1))
    with pytest.raises(RuntimeError):
        encoder.finish()
    with make_encoder(fmt, MODEL_RATE) as encoder:
        encoder.feed(tone(0.1))
    finished = make_encoder(fmt, MODEL_RATE)
    finished.finish()
    finished.close()
    with pytest.raises(RuntimeError):
        finished.feed(tone(0.1))


@pytest.mark.parametrize("name", ["wav", "flac", "pcm"])
def test_it_finishes_an_empty_stream(name: str) -> None:
    fmt = parse_openai_format(name)
    samples, _ = decode_audio(make_encoder(fmt, MODEL_RATE).finish(), fmt)
    assert len(samples) == 0


def test_it_finishes_empty_compressed_streams_with_at_most_a_header() -> None:
    # ffmpeg writes no end-of-stream page without packets, so an empty Ogg
    # stream is the two header pages only (libsndfile will not open it).
    opus = make_encoder(parse_openai_format("opus"), MODEL_RATE).finish()
    assert opus.startswith(b"OggS") and b"OpusHead" in opus and b"OpusTags" in opus
    # mp3 and ADTS have no stream header at all.
    assert make_encoder(parse_openai_format("mp3"), MODEL_RATE).finish() == b""
    assert make_encoder(parse_openai_format("aac"), MODEL_RATE).finish() == b""


def test_it_resolves_the_native_rate() -> None:
    assert make_encoder(parse_elevenlabs_format("wav"), MODEL_RATE).format.sample_rate == 22050
    assert make_encoder(parse_elevenlabs_format("opus"), MODEL_RATE).format.sample_rate == 24000
    encoder = make_encoder(parse_openai_format("pcm"), MODEL_RATE)
    encoder.feed(tone(1.0))
    encoder.finish()
    assert encoder.samples_out == 24000
    assert encoder.duration_s == pytest.approx(1.0)


def test_it_rejects_input_that_is_not_float_mono() -> None:
    encoder = make_encoder(parse_elevenlabs_format("pcm_22050"), MODEL_RATE)
    with pytest.raises(ValueError, match="mono"):
        encoder.feed(np.zeros((100, 2), dtype=np.float32))
    with pytest.raises(TypeError, match="float"):
        encoder.feed(np.zeros(100, dtype=np.int16))
    assert len(encoder.feed(np.zeros((100, 1), dtype=np.float64))) == 200
    encoder.close()


def test_it_survives_nan_and_overdriven_input() -> None:
    x = tone(0.5)
    x[1000:1010] = np.nan
    x[2000:2100] = 3.0
    samples, _ = decode_audio(encode_all(x, MODEL_RATE, parse_openai_format("pcm")), "pcm")
    assert np.isfinite(samples).all()
    assert np.abs(samples).max() <= 1.0
    # The filter was not poisoned: the tone after the damage is intact.
    tail = samples[int(0.3 * 24000) :]
    assert np.sqrt(np.mean(tail**2)) == pytest.approx(0.5 / np.sqrt(2), rel=0.02)
