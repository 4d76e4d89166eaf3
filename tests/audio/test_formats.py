"""Format names of both dialects: what they parse to, and what they refuse."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tts.audio.formats import (
    ELEVENLABS_DEFAULT,
    ELEVENLABS_FORMATS,
    NATIVE_RATE,
    OPENAI_DEFAULT,
    OPENAI_FORMATS,
    OutputFormat,
    UnknownFormatError,
    parse_elevenlabs_format,
    parse_openai_format,
    with_native_rate,
)


@pytest.mark.parametrize("name", ELEVENLABS_FORMATS)
def test_it_parses_every_elevenlabs_format(name: str) -> None:
    fmt = parse_elevenlabs_format(name)
    assert fmt.name == name
    parts = name.split("_")
    assert fmt.codec == parts[0]
    assert fmt.sample_rate == (int(parts[1]) if len(parts) > 1 else NATIVE_RATE)
    if len(parts) == 3:
        assert fmt.bitrate_kbps == int(parts[2])
    assert fmt.content_type.startswith("audio/")
    assert fmt.extension


@pytest.mark.parametrize(
    ("name", "codec", "rate", "kbps", "content_type"),
    [
        ("pcm_16000", "pcm", 16000, None, "audio/pcm"),
        ("pcm_44100", "pcm", 44100, None, "audio/pcm"),
        ("mp3_22050_32", "mp3", 22050, 32, "audio/mpeg"),
        ("mp3_44100_128", "mp3", 44100, 128, "audio/mpeg"),
        ("opus_48000_64", "opus", 48000, 64, "audio/ogg"),
        ("ulaw_8000", "ulaw", 8000, None, "audio/basic"),
        ("alaw_8000", "alaw", 8000, None, "audio/x-alaw-basic"),
        ("wav_24000", "wav", 24000, None, "audio/wav"),
        ("flac_48000", "flac", 48000, None, "audio/flac"),
        ("wav", "wav", NATIVE_RATE, None, "audio/wav"),
        ("opus", "opus", NATIVE_RATE, 64, "audio/ogg"),
    ],
)
def test_it_parses_elevenlabs_names(name: str, codec: str, rate: int, kbps: int | None, content_type: str) -> None:
    fmt = parse_elevenlabs_format(name)
    assert (fmt.codec, fmt.sample_rate, fmt.bitrate_kbps, fmt.content_type) == (
        codec,
        rate,
        kbps,
        content_type,
    )


@pytest.mark.parametrize(
    ("name", "codec", "rate", "kbps", "content_type", "extension"),
    [
        ("mp3", "mp3", 24000, 64, "audio/mpeg", "mp3"),
        ("opus", "opus", 24000, 32, "audio/ogg", "opus"),
        ("aac", "aac", 24000, 64, "audio/aac", "aac"),
        ("flac", "flac", 24000, None, "audio/flac", "flac"),
        ("wav", "wav", 24000, None, "audio/wav", "wav"),
        ("pcm", "pcm", 24000, None, "audio/pcm", "pcm"),
    ],
)
def test_it_parses_openai_names(
    name: str, codec: str, rate: int, kbps: int | None, content_type: str, extension: str
) -> None:
    fmt = parse_openai_format(name)
    assert fmt == OutputFormat(name, codec, rate, kbps, content_type, extension)  # type: ignore[arg-type]


def test_it_parses_the_defaults() -> None:
    assert parse_elevenlabs_format(ELEVENLABS_DEFAULT).codec == "mp3"
    assert parse_openai_format(OPENAI_DEFAULT).codec == "mp3"
    assert set(OPENAI_FORMATS) == {"mp3", "opus", "aac", "flac", "wav", "pcm"}


def test_it_marks_raw_formats() -> None:
    raw = {n for n in ELEVENLABS_FORMATS if parse_elevenlabs_format(n).is_raw}
    assert raw == {f"pcm_{r}" for r in (8000, 16000, 22050, 24000, 44100, 48000)} | {
        "ulaw_8000",
        "alaw_8000",
    }


@pytest.mark.parametrize(
    ("parse", "name", "model_rate", "expected"),
    [
        (parse_elevenlabs_format, "wav", 22050, 22050),
        (parse_elevenlabs_format, "flac", 16000, 16000),
        (parse_elevenlabs_format, "opus", 22050, 24000),  # Opus has no 22050
        (parse_elevenlabs_format, "opus", 16000, 16000),
        (parse_elevenlabs_format, "opus", 96000, 48000),
        (parse_openai_format, "wav", 22050, 24000),  # OpenAI's formats are all 24 kHz
        (parse_openai_format, "flac", 22050, 24000),
        (parse_elevenlabs_format, "mp3_44100_128", 22050, 44100),  # fixed rate stays
        (parse_openai_format, "pcm", 22050, 24000),
    ],
)
def test_it_resolves_native_rates(
    parse: Callable[[str], OutputFormat], name: str, model_rate: int, expected: int
) -> None:
    fmt = with_native_rate(parse(name), model_rate)
    assert fmt.sample_rate == expected
    assert not fmt.follows_model_rate
    assert fmt.name == name


def test_it_rejects_a_nonpositive_model_rate() -> None:
    with pytest.raises(ValueError, match="positive"):
        with_native_rate(parse_elevenlabs_format("wav"), 0)


@pytest.mark.parametrize("name", ["mp3_44100_999", "MP3_44100_128", "wav_11025", "pcm", "aac", "", "mp3 "])
def test_it_rejects_unknown_elevenlabs_formats(name: str) -> None:
    with pytest.raises(UnknownFormatError) as info:
        parse_elevenlabs_format(name)
    assert isinstance(info.value, ValueError)
    assert info.value.allowed == ELEVENLABS_FORMATS
    assert "allowed: pcm_8000, pcm_16000" in str(info.value)
    assert "mp3_44100_128" in str(info.value)


@pytest.mark.parametrize("name", ["mp3_44100_128", "ogg", "MP3", "pcm_16000", ""])
def test_it_rejects_unknown_openai_formats(name: str) -> None:
    with pytest.raises(UnknownFormatError) as info:
        parse_openai_format(name)
    assert info.value.allowed == OPENAI_FORMATS
    assert "allowed: mp3, opus, aac, flac, wav, pcm" in str(info.value)
    assert repr(name) in str(info.value)


def test_it_rejects_a_non_string_name() -> None:
    with pytest.raises(UnknownFormatError):
        parse_openai_format(None)  # type: ignore[arg-type]
    with pytest.raises(UnknownFormatError):
        parse_elevenlabs_format(["mp3"])  # type: ignore[arg-type]
