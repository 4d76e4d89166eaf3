"""Output formats: the names callers ask for and what each one means.

Two dialects name formats differently. ElevenLabs packs codec, rate and
bitrate into one name (``mp3_44100_128``, ``pcm_16000``, ``ulaw_8000``);
OpenAI names only the codec (``mp3``, ``opus``, ``pcm``) and leaves the rest
to the server. Both parsers turn a name into an :class:`OutputFormat`, the
single description that ``tts.audio.encode`` and the HTTP layer work from.

Native rate. Some names do not fix a sample rate: ElevenLabs' plain ``wav``,
``flac`` and ``opus`` (our additions). These
carry ``sample_rate == NATIVE_RATE`` (0) and follow the model: call
:func:`with_native_rate` once the voice is known (``make_encoder`` does it for
you, and its ``encoder.format`` is the resolved format). Self-describing
containers (wav, flac) take the model rate as is, which avoids a resampling
pass; Opus only runs at 8/12/16/24/48 kHz, so ``opus`` takes the smallest of
those at or above the model rate (22050 Hz -> 24000 Hz).

OpenAI serves every format at 24 kHz (its documentation fixes ``pcm``: 24 kHz
s16le; its wav and flac are 24 kHz too), and so do we, whatever the model's rate:
``mp3`` is 24 kHz / 64 kbps (MPEG-2 layer III), ``opus`` is Ogg/Opus 24 kHz /
32 kbps, ``aac`` is ADTS 24 kHz / 64 kbps, ``wav`` and ``flac`` are 24 kHz s16.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

Codec = Literal["pcm", "wav", "mp3", "opus", "flac", "ulaw", "alaw", "aac"]

#: ``OutputFormat.sample_rate`` of a format whose rate follows the model.
NATIVE_RATE = 0

OPUS_RATES = (8000, 12000, 16000, 24000, 48000)

_CONTENT_TYPES: dict[str, str] = {
    # Raw little-endian s16: "audio/L16" would promise big-endian (RFC 2586).
    "pcm": "audio/pcm",
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",  # Ogg/Opus, RFC 7845
    "flac": "audio/flac",
    "ulaw": "audio/basic",
    "alaw": "audio/x-alaw-basic",
    "aac": "audio/aac",
}

_EXTENSIONS: dict[str, str] = {
    "pcm": "pcm",
    "wav": "wav",
    "mp3": "mp3",
    "opus": "opus",
    "flac": "flac",
    "ulaw": "ulaw",
    "alaw": "alaw",
    "aac": "aac",
}


@dataclass(frozen=True)
class OutputFormat:
    """One concrete way to deliver audio; ``name`` is what the caller asked for."""

    name: str
    codec: Codec
    sample_rate: int
    bitrate_kbps: int | None
    content_type: str
    extension: str

    @property
    def follows_model_rate(self) -> bool:
        return self.sample_rate == NATIVE_RATE

    @property
    def is_raw(self) -> bool:
        """True for headerless formats: the client must know rate and encoding."""
        return self.codec in ("pcm", "ulaw", "alaw")


class UnknownFormatError(ValueError):
    """A format name that the dialect does not offer; ``allowed`` lists those it does."""

    def __init__(self, name: str, allowed: tuple[str, ...], dialect: str) -> None:
        self.name = name
        self.allowed = allowed
        super().__init__(f"Unknown {dialect} output format {name!r}; allowed: {', '.join(allowed)}")


def _fmt(name: str, codec: Codec, rate: int, kbps: int | None = None) -> OutputFormat:
    return OutputFormat(
        name=name,
        codec=codec,
        sample_rate=rate,
        bitrate_kbps=kbps,
        content_type=_CONTENT_TYPES[codec],
        extension=_EXTENSIONS[codec],
    )


_PCM_RATES = (8000, 16000, 22050, 24000, 44100, 48000)
_MP3 = ((22050, 32), (44100, 32), (44100, 64), (44100, 96), (44100, 128), (44100, 192))
_OPUS_KBPS = (32, 64, 96, 128, 192)


def _elevenlabs_table() -> dict[str, OutputFormat]:
    table: dict[str, OutputFormat] = {}
    for rate in _PCM_RATES:
        table[f"pcm_{rate}"] = _fmt(f"pcm_{rate}", "pcm", rate)
    for rate, kbps in _MP3:
        table[f"mp3_{rate}_{kbps}"] = _fmt(f"mp3_{rate}_{kbps}", "mp3", rate, kbps)
    for kbps in _OPUS_KBPS:
        table[f"opus_48000_{kbps}"] = _fmt(f"opus_48000_{kbps}", "opus", 48000, kbps)
    table["ulaw_8000"] = _fmt("ulaw_8000", "ulaw", 8000)
    table["alaw_8000"] = _fmt("alaw_8000", "alaw", 8000)
    # Our additions: containers ElevenLabs does not offer, at the pcm rates.
    for codec in ("wav", "flac"):
        for rate in _PCM_RATES:
            table[f"{codec}_{rate}"] = _fmt(f"{codec}_{rate}", codec, rate)
    table["wav"] = _fmt("wav", "wav", NATIVE_RATE)
    table["flac"] = _fmt("flac", "flac", NATIVE_RATE)
    table["opus"] = _fmt("opus", "opus", NATIVE_RATE, 64)
    return table


_OPENAI: dict[str, OutputFormat] = {
    "mp3": _fmt("mp3", "mp3", 24000, 64),
    "opus": _fmt("opus", "opus", 24000, 32),
    "aac": _fmt("aac", "aac", 24000, 64),
    "flac": _fmt("flac", "flac", 24000),
    "wav": _fmt("wav", "wav", 24000),
    "pcm": _fmt("pcm", "pcm", 24000),
}

_ELEVENLABS = _elevenlabs_table()

ELEVENLABS_FORMATS: tuple[str, ...] = tuple(_ELEVENLABS)
OPENAI_FORMATS: tuple[str, ...] = tuple(_OPENAI)

#: ElevenLabs' own default ``output_format``.
ELEVENLABS_DEFAULT = "mp3_44100_128"
#: OpenAI's default ``response_format``.
OPENAI_DEFAULT = "mp3"


def parse_elevenlabs_format(name: str) -> OutputFormat:
    """The format for an ElevenLabs ``output_format`` value (exact, lower-case names)."""
    try:
        return _ELEVENLABS[name]
    except (KeyError, TypeError):
        raise UnknownFormatError(name, ELEVENLABS_FORMATS, "ElevenLabs") from None


def parse_openai_format(name: str) -> OutputFormat:
    """The format for an OpenAI ``response_format`` value."""
    try:
        return _OPENAI[name]
    except (KeyError, TypeError):
        raise UnknownFormatError(name, OPENAI_FORMATS, "OpenAI") from None


def pcm_format(sample_rate: int = NATIVE_RATE) -> OutputFormat:
    """Raw s16le mono at any ``sample_rate`` (``NATIVE_RATE``: the model's, no resampling), for a
    protocol that fixes the codec and says the rate itself (Wyoming's ``audio-start``)."""
    if sample_rate < 0:
        raise ValueError(f"sample_rate must be positive or NATIVE_RATE, got {sample_rate}")
    return _fmt("pcm" if sample_rate == NATIVE_RATE else f"pcm_{sample_rate}", "pcm", sample_rate)


def with_native_rate(fmt: OutputFormat, model_rate: int) -> OutputFormat:
    """``fmt`` with a concrete sample rate; formats with a fixed rate come back unchanged."""
    if model_rate <= 0:
        raise ValueError(f"model_rate must be positive, got {model_rate}")
    if not fmt.follows_model_rate:
        return fmt
    rate = model_rate
    if fmt.codec == "opus":
        rate = next((r for r in OPUS_RATES if r >= model_rate), OPUS_RATES[-1])
    return dataclasses.replace(fmt, sample_rate=rate)
