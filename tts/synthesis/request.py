"""What a synthesis is asked and what it answers: the request and result types every entry
point shares. How it refuses is ``tts.errors``.

A leaf of ``tts.synthesis``: it imports no other module of the package, so anything
may import it without making a circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from accounts.models import ApiKey, Tenant
from tts.audio.formats import OutputFormat
from tts.models import SynthesisRecord

#: Between two turns' texts in a dialogue's text (its history item's, its alignment's characters).
TURN_SEPARATOR = "\n"


@dataclass(frozen=True)
class DialogueTurn:
    """One turn of a dialogue (ElevenLabs' ``inputs[i]``): a text and the voice that speaks it."""

    text: str
    voice_id: str


def dialogue_text(turns: list[DialogueTurn]) -> str:
    """A dialogue's text: its turns' texts, one after the other (``TURN_SEPARATOR`` between)."""
    return TURN_SEPARATOR.join(turn.text for turn in turns)


@dataclass
class SynthesisRequest:
    tenant: Tenant
    voice_id: str
    text: str
    output_format: OutputFormat
    source: str
    api_key: ApiKey | None = None
    model_id: str | None = None
    speed: float = 1.0
    language: str | None = None
    enable_logging: bool = True
    normalization: str = "auto"
    request_id: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    text_field: str = "text"
    voice_field: str = "voice_id"
    model_field: str = "model_id"
    #: The caller asked for character timestamps: the history item keeps them (captions).
    timestamps: bool = False
    #: A cancelled run keeps what it delivered as the history item's audio (the playground's Stop:
    #: billed for what was spoken, and downloadable). API streams keep only a finished file.
    keep_cancelled_audio: bool = False
    #: Noise seed: the same seed, text, voice and settings give the same bytes (``None``: fresh noise).
    seed: int | None = None
    #: Request stitching (``tts.synthesis.stages.stitching``): the text around this one, or earlier/later requests' ids.
    previous_text: str | None = None
    next_text: str | None = None
    previous_request_ids: list[str] = field(default_factory=list)
    next_request_ids: list[str] = field(default_factory=list)
    #: ``[{"pronunciation_dictionary_id", "version_id"?}]``, at most 3; none: the tenant's default dictionaries.
    pronunciation_dictionary_locators: list[dict[str, Any]] = field(default_factory=list)
    #: Live audio messages' alignment times run from the start of the utterance (ElevenLabs'
    #: ``sync_alignment``), not from the start of each message (``LiveUtterance``).
    alignment_from_start: bool = False
    #: Silence after each sentence, ms; ``None``: ``TTS_SENTENCE_SILENCE_MS`` (Wyoming has its own, as wyoming-piper).
    sentence_silence_ms: int | None = None
    #: A dialogue (text-to-dialogue): its turns, each spoken by its own voice, in one synthesis
    #: (``None``: not a dialogue). Then ``text`` is ``dialogue_text(turns)`` and ``voice_id`` the
    #: first turn's (``stages.resolve``).
    turns: list[DialogueTurn] | None = None

    @property
    def silence_ms(self) -> int:
        return settings.TTS_SENTENCE_SILENCE_MS if self.sentence_silence_ms is None else self.sentence_silence_ms

    @property
    def noise_variation(self) -> float:
        """The factor on the engine's noise scales its ``voice_settings`` ask for (:func:`noise_variation`)."""
        return noise_variation(self.settings)


def noise_variation(voice_settings: dict[str, Any]) -> float:
    """``voice_settings.stability`` (0..1) as a factor on the VITS noise scales.

    0.5 (ElevenLabs' default) and no stability keep the voice's own scales.
    Above 0.5 they shrink linearly to none at 1.0 (every take alike: the
    model's mean reading); below 0.5 they grow linearly to 1.5 times at 0.0.
    """
    stability = voice_settings.get("stability")
    if stability is None:
        return 1.0
    s = min(1.0, max(0.0, float(stability)))
    return 2.0 * (1.0 - s) if s >= 0.5 else 1.0 + (0.5 - s)


@dataclass
class SynthesisResult:
    audio: bytes
    record: SynthesisRecord
    output_format: OutputFormat
    #: ``{"alignment": ..., "normalized_alignment": ...}`` (``None`` on a cache hit whose timings were evicted).
    alignment: dict[str, Any] | None = None
