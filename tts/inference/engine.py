"""The inference service's contract: what an engine takes and what it gives back.

Nothing here knows about Django, HTTP or tenants. An engine turns phoneme ids
into float PCM at the model's own sample rate; the synthesis pipeline does the
rest (text, resampling, encoding, records).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


class EngineError(Exception):
    """An engine failed. ``retryable`` says whether trying again can help."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


#: The engine door's bound until the platform says otherwise (``TTS_ENGINE_MAX_PHONEME_IDS``).
DEFAULT_MAX_PHONEME_IDS = 1800


def _default_bound() -> int:
    return DEFAULT_MAX_PHONEME_IDS


_bound: Callable[[], int] = _default_bound


def configure_phoneme_ids_bound(bound: Callable[[], int]) -> None:
    """Where the door reads its bound (this layer knows no Django: ``tts/apps.py`` gives it the setting)."""
    global _bound
    _bound = bound


def max_phoneme_ids() -> int:
    """The most phoneme ids one engine call takes (``TTS_ENGINE_MAX_PHONEME_IDS``)."""
    return int(_bound())


class InputTooLong(EngineError):
    """An engine call refused at the door: more phoneme ids than any segment the pipeline makes."""

    def __init__(self, count: int, limit: int) -> None:
        super().__init__(f"{count} phoneme ids; an engine call takes at most {limit}", retryable=False)
        self.count = count
        self.limit = limit


def check_phoneme_ids(phoneme_ids: Sequence[int]) -> None:
    """The engine's own door, shared by every engine: refuse input over the bound, whatever made it."""
    limit = max_phoneme_ids()
    if len(phoneme_ids) > limit:
        raise InputTooLong(len(phoneme_ids), limit)


@dataclass(frozen=True)
class ModelSpec:
    """What the registry needs to load one model version (a plain snapshot of the row)."""

    id: int
    engine: str
    model_path: str
    config_path: str
    sha256: str = ""
    device: str = "auto"
    options: dict[str, object] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class SynthesisParams:
    """Per-request knobs. ``None`` means the voice's own default from its config.

    ``seed``: the engine draws all its noise from generators seeded with it, so
    the same ids, knobs and seed give the same samples (``None``: fresh noise).
    ``variation`` multiplies both noise scales (``noise_scale`` and ``noise_w``,
    the voice's defaults when those are ``None``): 0 is the flat, most stable
    reading, 1 the voice's own.
    """

    speaker_id: int | None = None
    length_scale: float | None = None
    noise_scale: float | None = None
    noise_w: float | None = None
    seed: int | None = None
    variation: float = 1.0
    #: A blended voice: (speaker index, weight) pairs, weights summing to 1. Engines whose
    #: speakers are style vectors (Kokoro) mix them; others use ``speaker_id``.
    style_blend: tuple[tuple[int, float], ...] = ()


def derive_seed(seed: int, *parts: object) -> int:
    """A 63-bit seed for one part of a seeded synthesis (a segment, a sentence, a noise source).

    Stable across processes and versions (no ``hash()``), independent per part.
    """
    digest = hashlib.blake2b(repr((seed, *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


@dataclass
class EngineOutput:
    """Float32 mono PCM in [-1, 1] at ``sample_rate``.

    ``phoneme_samples`` (when the engine knows it) holds, for each input
    phoneme id, how many output samples it produced; used for timestamps.
    """

    audio: np.ndarray
    sample_rate: int
    phoneme_samples: np.ndarray | None = None


class StreamPace(Protocol):
    """How far a stream's delivered audio runs ahead of its listener's real-time playback.

    The contract between the streaming pipeline (which measures it from what was
    actually sent) and a windowed engine's ``iter_synthesize_ids(..., pace=...)``
    (which decodes small windows only while the listener waits, and the rest of a
    sentence the way a whole-file request does once the stream is comfortably ahead).
    """

    def lead_s(self) -> float:
        """Seconds of audio sent beyond what playback, started at the first byte, has used up.

        Before the first byte: 0 (the listener is waiting). Negative: late (an underrun).
        """
        ...


class Engine(Protocol):
    """One loaded model version.

    A windowed engine (Piper's split ONNX graph, the PyTorch engine, Kokoro once split) also has
    ``windowed: bool`` and ``iter_synthesize_ids(phoneme_ids, params, *, window_frames=None,
    pace: StreamPace | None = None) -> Iterator[EngineOutput]``: the sentence's audio in pieces
    whose concatenation equals ``synthesize_ids``' (within the engine's stated SNR), the first
    piece carrying ``phoneme_samples`` for the whole sentence.
    """

    sample_rate: int
    num_speakers: int
    hop_length: int
    default_length_scale: float

    def phonemize(self, text: str) -> list[list[str]]:
        """Text to phonemes, one list per sentence the phonemizer found."""
        ...

    def phonemes_to_ids(self, phonemes: Sequence[str]) -> list[int]:
        """Phonemes to the model's ids (BOS/EOS/padding included)."""
        ...

    def synthesize_ids(self, phoneme_ids: Sequence[int], params: SynthesisParams) -> EngineOutput:
        """Run the model on one utterance's phoneme ids. Blocking; never call on an event loop."""
        ...

    def close(self) -> None:
        """Release what the engine holds (sessions, device memory)."""
        ...
