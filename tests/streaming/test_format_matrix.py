"""Every format of both APIs, whole and streamed, decoded by soundfile (libsndfile) and by PyAV (ffmpeg).

Against a real daphne (audio cache off, so every answer is synthesized):
ElevenLabs ``output_format`` on ``/v1/text-to-speech/joe`` (whole) and
``/stream`` (chunked), OpenAI ``response_format`` on ``/v1/audio/speech``
(chunked under daphne, whole under the test client). Each answer must decode
strictly with both libraries (no fallback from one to the other), at the rate
the caller asked for (OpenAI: 24 kHz for every format), to a duration within a
codec's padding of the history item's, and sound like speech. The one
documented exception: libsndfile has no AAC decoder, so ``aac`` is checked by
PyAV only (and played by Chromium in tests/browser/test_formats.py).
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import av
import httpx
import numpy as np
import pytest
import soundfile as sf
import soxr

from tests.audio_checks import assert_speech
from tests.fixtures import TenantCtx, make_joe, make_tenant
from tests.servers import start_daphne
from tts.audio.formats import ELEVENLABS_FORMATS, OPENAI_FORMATS, OutputFormat, parse_elevenlabs_format
from tts.audio.formats import parse_openai_format as parse_openai
from tts.models import SynthesisRecord

pytestmark = [pytest.mark.server, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TEXT = "Every format opens everywhere."
MODEL_RATE = 22050
_SF_RAW = {"pcm": "PCM_16", "ulaw": "ULAW", "alaw": "ALAW"}
_AV_RAW = {"pcm": "s16le", "ulaw": "mulaw", "alaw": "alaw"}


def expected_rate(api: str, name: str) -> int:
    """What the caller asked for: the rate in the name; OpenAI's 24 kHz; else the model's (Opus: 24 kHz)."""
    if api == "openai":
        return 24000
    parts = name.split("_")
    if len(parts) > 1:
        return int(parts[1])
    return 24000 if name == "opus" else MODEL_RATE


def decode_soundfile(data: bytes, fmt: OutputFormat, rate: int) -> tuple[np.ndarray, int]:
    if fmt.is_raw:
        samples, got = sf.read(
            io.BytesIO(data),
            format="RAW",
            subtype=_SF_RAW[fmt.codec],
            samplerate=rate,
            channels=1,
            endian="LITTLE",
            dtype="float32",
        )
    else:
        samples, got = sf.read(io.BytesIO(data), dtype="float32")
    return samples, int(got)


def decode_pyav(data: bytes, fmt: OutputFormat, rate: int) -> tuple[np.ndarray, int]:
    kwargs: dict[str, object] = {}
    if fmt.is_raw:
        kwargs = {"format": _AV_RAW[fmt.codec], "options": {"sample_rate": str(rate), "ch_layout": "mono"}}
    with av.open(io.BytesIO(data), "r", **kwargs) as container:  # type: ignore[call-overload]
        stream = container.streams.audio[0]
        got = stream.codec_context.sample_rate
        assert stream.codec_context.channels == 1
        pieces = [frame.to_ndarray().reshape(-1).astype(np.float32) for frame in container.decode(stream)]
    samples = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
    if samples.dtype != np.float32 or np.abs(samples).max(initial=0) > 1.5:  # integer sample formats
        samples = samples / 32768.0
    if fmt.codec == "opus":
        # ffmpeg decodes every Opus stream at 48 kHz (the codec's own rate); the rate the
        # audio was made at is the OpusHead's input_sample_rate, which is what we check.
        assert got == 48000
        samples, got = soxr.resample(samples, 48000, rate).astype(np.float32), opus_input_rate(data)
    return samples, int(got)


def opus_input_rate(data: bytes) -> int:
    head = data.index(b"OpusHead")
    return int.from_bytes(data[head + 12 : head + 16], "little")


def check(api: str, name: str, data: bytes, record: SynthesisRecord) -> None:
    fmt = parse_openai(name) if api == "openai" else parse_elevenlabs_format(name)
    rate = expected_rate(api, name)
    assert record.sample_rate == rate, f"history says {record.sample_rate} Hz"
    lossless = fmt.codec in ("pcm", "wav", "flac", "ulaw", "alaw")
    # Lossy codecs add an encoder delay and pad the last frame (mp3 ~50 ms, AAC ~46 ms, Opus ~7 ms).
    slack = 0.002 if lossless else 0.12
    decoders = [decode_pyav] if fmt.codec == "aac" else [decode_soundfile, decode_pyav]
    for decode in decoders:
        samples, got = decode(data, fmt, rate)
        assert got == rate, f"{decode.__name__}: {got} Hz, asked for {rate}"
        duration = len(samples) / got
        assert record.duration_s - 0.002 <= duration <= record.duration_s + slack, (
            f"{decode.__name__}: {duration:.3f} s, history says {record.duration_s:.3f} s"
        )
        assert_speech(samples, got, expected_rate=rate, text=TEXT)


@pytest.fixture(scope="module")
def server(django_db_setup: None) -> Iterator[str]:
    proc = start_daphne({"TTS_AUDIO_CACHE_ENABLED": "false"})
    yield proc.url
    proc.stop()


@pytest.fixture
def ctx(db: None) -> TenantCtx:
    make_joe()
    return make_tenant("formats", limit=10_000_000)


def _run_all(api: str, names: tuple[str, ...], fetch: object) -> None:
    failures: list[str] = []
    for name in names:
        try:
            data, content_type, item = fetch(name)  # type: ignore[operator]
            fmt = parse_openai(name) if api == "openai" else parse_elevenlabs_format(name)
            assert content_type == fmt.content_type, content_type
            check(api, name, data, SynthesisRecord.objects.get(pk=item))
        except AssertionError as exc:
            failures.append(f"{api} {name}: {exc}")
        except Exception as exc:
            failures.append(f"{api} {name}: {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("route", ["whole", "stream"])
def test_every_elevenlabs_format_decodes(server: str, ctx: TenantCtx, route: str) -> None:
    suffix = "/stream" if route == "stream" else ""

    def fetch(name: str) -> tuple[bytes, str, str]:
        with httpx.stream(
            "POST",
            f"{server}/v1/text-to-speech/joe{suffix}?output_format={name}",
            json={"text": TEXT},
            headers={"xi-api-key": ctx.key},
            timeout=120,
        ) as response:
            assert response.status_code == 200, response.read()[:300]
            if route == "stream":
                assert response.headers.get("transfer-encoding") == "chunked"
            data = b"".join(response.iter_bytes())
            return data, response.headers["content-type"], response.headers["history-item-id"]

    _run_all("elevenlabs", ELEVENLABS_FORMATS, fetch)
    assert SynthesisRecord.objects.filter(tenant=ctx.tenant, status="success").count() == len(ELEVENLABS_FORMATS)


@pytest.mark.parametrize("route", ["whole", "stream"])
def test_every_openai_format_decodes(server: str, ctx: TenantCtx, route: str) -> None:
    body = {"model": "tts-1", "input": TEXT, "voice": "alloy"}

    def fetch(name: str) -> tuple[bytes, str, str]:
        if route == "whole":  # the test client runs the view under WSGI: the whole file
            answer = ctx.client().post("/v1/audio/speech", {**body, "response_format": name}, format="json")
            assert answer.status_code == 200, answer.content[:300]
            return answer.content, answer["Content-Type"], answer["history-item-id"]
        with httpx.stream(
            "POST",
            f"{server}/v1/audio/speech",
            json={**body, "response_format": name},
            headers={"Authorization": f"Bearer {ctx.key}"},
            timeout=120,
        ) as response:
            assert response.status_code == 200, response.read()[:300]
            assert response.headers.get("transfer-encoding") == "chunked"
            data = b"".join(response.iter_bytes())
            return data, response.headers["content-type"], response.headers["history-item-id"]

    _run_all("openai", OPENAI_FORMATS, fetch)
    assert SynthesisRecord.objects.filter(tenant=ctx.tenant, status="success").count() == len(OPENAI_FORMATS)
