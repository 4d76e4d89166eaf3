"""Request fields the OpenAI and ElevenLabs routes accept and do not act on.

One table per dialect, field -> why: the ``X-Ignored-Fields`` response header
is made from it (the fields of this request that were set to something other
than their no-op value), and docs/api.md's table of ignored fields must match
it (tests/api/test_ignored_fields.py checks both, and that every field of the
request serializers is either here or honoured).

Some fields are ignored only by one engine: Kokoro has no sampling noise, so
``seed`` and ``voice_settings.stability`` change nothing there while they do
on Piper and VITS voices. The header is written once the voice, hence the
engine, is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.http.response import HttpResponseBase

from tts.models import ModelVersion, SynthesisRecord

IGNORED_FIELDS_HEADER = "X-Ignored-Fields"


@dataclass(frozen=True)
class IgnoredField:
    reason: str
    #: The value that asks for nothing this server does not do anyway: the header leaves it out.
    default: Any = None
    #: Ignored only by these engines (``ModelVersion.Engine``); ``None``: by every engine.
    engines: frozenset[str] | None = None


_KOKORO = frozenset({ModelVersion.Engine.KOKORO_ONNX.value})

OPENAI_IGNORED: dict[str, IgnoredField] = {
    "instructions": IgnoredField(
        "the models read the text only; none follows a prompt about tone or delivery", default=""
    ),
}

ELEVENLABS_IGNORED: dict[str, IgnoredField] = {
    "voice_settings.similarity_boost": IgnoredField(
        "each voice is a fixed model or style vector; there is no reference recording to move closer to",
        default=0.75,
    ),
    "voice_settings.style": IgnoredField("the models have no style-exaggeration control", default=0.0),
    "voice_settings.use_speaker_boost": IgnoredField("the models have no speaker-similarity boost", default=False),
    "voice_settings.stability": IgnoredField(
        "Kokoro voices have no sampling noise to scale (honoured on Piper and VITS voices)",
        default=0.5,
        engines=_KOKORO,
    ),
    "seed": IgnoredField(
        "Kokoro voices are deterministic: every take is the same (honoured on Piper and VITS voices)",
        engines=_KOKORO,
    ),
    "use_pvc_as_ivc": IgnoredField("there are no professional voice clones here", default=False),
    "apply_language_text_normalization": IgnoredField(
        "each language's normalization is switched by `apply_text_normalization` alone", default=False
    ),
    "audio_effects": IgnoredField("no audio effects are applied"),
    "optimize_streaming_latency": IgnoredField(
        "(query) streams always send each piece as soon as it is made; there is no quality to trade",
        default=0,
    ),
}

#: ElevenLabs' text-to-dialogue (tts.api.dialogue): what it accepts and does not act on (docs/dialogue.md).
DIALOGUE_IGNORED: dict[str, IgnoredField] = {
    "settings.similarity": IgnoredField(
        "each voice is a fixed model or style vector; there is no guidance strength to set", default=None
    ),
    "settings.clone_strength": IgnoredField("there are no professional voice clones here", default=None),
    "settings.stability": ELEVENLABS_IGNORED["voice_settings.stability"],
    "seed": ELEVENLABS_IGNORED["seed"],
    "use_pvc_as_ivc": ELEVENLABS_IGNORED["use_pvc_as_ivc"],
    "audio_effects": ELEVENLABS_IGNORED["audio_effects"],
}


def flatten(values: Mapping[str, Any], *, prefix: str = "") -> dict[str, Any]:
    """``{"voice_settings": {"style": 1}}`` as ``{"voice_settings": {...}, "voice_settings.style": 1}``."""
    flat: dict[str, Any] = {}
    for name, value in values.items():
        flat[prefix + name] = value
        if isinstance(value, Mapping):
            flat.update(flatten(value, prefix=f"{prefix}{name}."))
    return flat


def ignored_asked(table: Mapping[str, IgnoredField], values: Mapping[str, Any]) -> dict[str, IgnoredField]:
    """The fields of ``table`` that ``values`` (validated, flattened) set to something other than their no-op value."""
    asked = {}
    for name, spec in table.items():
        value = values.get(name)
        if value is None or value == spec.default or value in ({}, [], ""):
            continue
        asked[name] = spec
    return asked


def set_ignored_header(response: HttpResponseBase, asked: Mapping[str, IgnoredField], *, engine: str) -> None:
    """``X-Ignored-Fields: a, b``: what this request asked for and the engine that spoke it did not do."""
    names = [name for name, spec in asked.items() if spec.engines is None or engine in spec.engines]
    if names:
        response[IGNORED_FIELDS_HEADER] = ", ".join(names)


def record_engine(record: SynthesisRecord) -> str:
    """The engine that spoke ``record`` ("" when its model version is gone)."""
    version = record.model_version
    return version.engine if version is not None else ""
