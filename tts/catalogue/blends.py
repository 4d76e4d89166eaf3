"""Tenant-made voices: weighted blends of a style-vector model's voices (Kokoro).

Kokoro speaks with a 256-value style per voice (one row per token count);
a mix of two voices' rows is a voice of its own. Kokoro-FastAPI takes such
mixes as strings (``jf_alpha(2)+jm_kumo(1)``); here a mix is saved once as a
private voice with a name and an id, usable on every route like any voice and
visible to its tenant only. Blends are immutable: make a new one to change it
(cached audio stays right by construction).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from django.db import transaction

from accounts.models import Tenant
from infra.lookup_cache import clear_lookup_caches
from tts.catalogue.voices import active_model_version, voice_get
from tts.errors import SynthesisError
from tts.models import ModelVersion, Voice

MAX_COMPONENTS = 5
_PART = re.compile(r"^\s*([A-Za-z0-9_-]{1,64})\s*(?:\(\s*(\d{1,3}(?:\.\d{1,4})?)\s*\))?\s*$")


class VoiceBlendError(SynthesisError):
    """The blend cannot be made; ``field`` names the request field at fault."""

    def __init__(self, message: str, *, field: str, status: int = 400, code: str = "invalid_blend") -> None:
        super().__init__(message, code=code, status=status, field=field)


@dataclass(frozen=True)
class BlendPart:
    voice_id: str
    weight: float


def parse_blend(value: object) -> list[BlendPart]:
    """``"jf_alpha(2)+jm_kumo(1)"`` (Kokoro-FastAPI's spelling; no weight means 1) or
    ``{"jf_alpha": 0.6, "jm_kumo": 0.4}``, as parts."""
    parts: list[BlendPart] = []
    if isinstance(value, str):
        for piece in value.split("+"):
            found = _PART.match(piece)
            if not found:
                raise VoiceBlendError(
                    f"blend: cannot read {piece.strip()!r}; write voice_a(2)+voice_b(1).", field="blend"
                )
            parts.append(BlendPart(found.group(1), float(found.group(2) or 1)))
    elif isinstance(value, dict):
        for voice_id, weight in value.items():
            if not isinstance(weight, int | float) or isinstance(weight, bool):
                raise VoiceBlendError(f"blend: the weight of {voice_id!r} must be a number.", field="blend")
            parts.append(BlendPart(str(voice_id), float(weight)))
    else:
        raise VoiceBlendError('blend: expected "voice_a(2)+voice_b(1)" or {"voice_a": 2, "voice_b": 1}.', field="blend")
    if not 2 <= len(parts) <= MAX_COMPONENTS:
        raise VoiceBlendError(f"blend: mix 2 to {MAX_COMPONENTS} voices.", field="blend")
    if len({p.voice_id for p in parts}) != len(parts):
        raise VoiceBlendError("blend: each voice may appear once.", field="blend")
    if any(not 0 < p.weight <= 100 for p in parts):
        raise VoiceBlendError("blend: weights must be greater than 0 and at most 100.", field="blend")
    return parts


def voice_blend_create(*, tenant: Tenant, name: str, blend: object, description: str = "") -> Voice:
    """Save a private voice of ``tenant`` mixing the styles of ``blend``'s voices."""
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise VoiceBlendError("name: give the voice a name of 1 to 100 characters.", field="name")
    parts = parse_blend(blend)
    voices = []
    for part in parts:
        voice = voice_get(tenant, part.voice_id)
        if voice is None:
            raise VoiceBlendError(
                f"blend: a voice with voice_id '{part.voice_id}' was not found.",
                field="blend",
                status=404,
                code="voice_not_found",
            )
        if voice.blend:
            raise VoiceBlendError(
                f"blend: '{part.voice_id}' is a blend itself; mix the voices it is made of.", field="blend"
            )
        voices.append(voice)
    model_ids = {voice.model_id for voice in voices}
    if len(model_ids) != 1:
        raise VoiceBlendError("blend: all voices must belong to one model.", field="blend")
    version = active_model_version(voices[0].model_id)
    if version is None or version.engine != ModelVersion.Engine.KOKORO_ONNX:
        raise VoiceBlendError(
            f"blend: the voices of model '{voices[0].model_id}' cannot be blended (only Kokoro voices can).",
            field="blend",
        )
    total = sum(part.weight for part in parts)
    components = [
        {"voice_id": voice.voice_id, "speaker_index": voice.speaker_index, "weight": round(part.weight / total, 6)}
        for voice, part in zip(voices, parts, strict=True)
    ]
    spelled = "+".join(f"{c['voice_id']}({c['weight']:g})" for c in components)
    main = max(zip(voices, parts, strict=True), key=lambda vp: vp[1].weight)[0]
    with transaction.atomic():
        voice = Voice.objects.create(
            voice_id=f"blend-{secrets.token_hex(6)}",
            name=name,
            description=description.strip()[:2000] or f"A blend of {spelled}",
            language=main.language,
            labels={"engine": "kokoro", "blend": spelled},
            model_id=main.model_id,
            speaker_index=main.speaker_index,
            blend=components,
            tenant=tenant,
        )
    clear_lookup_caches()
    return voice


def voice_delete(*, tenant: Tenant, voice_id: str) -> bool:
    """Delete one of ``tenant``'s own voices; False when it has none of that id (shared ones included)."""
    deleted, _ = Voice.objects.filter(tenant=tenant, voice_id=voice_id).delete()
    clear_lookup_caches()
    return bool(deleted)
