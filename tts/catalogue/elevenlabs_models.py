"""ElevenLabs' model ids that clients send, and the models of this platform that answer them.

A request naming an ``eleven_*`` model is served by the voice's own model
(``tts.synthesis.stages.resolve``): so each id below stands for every model that serves
a voice the tenant may use, and speaks the languages those models speak.
``GET /v1/models`` lists them beside the platform's own models, so a client that
picks its model from that list finds the id it would send to ElevenLabs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tts.models import ModelVersion


@dataclass(frozen=True)
class ModelAlias:
    model_id: str
    name: str
    #: This platform's model ids that answer a request naming ``model_id``, and their languages.
    served_by: tuple[str, ...]
    languages: tuple[str, ...]


#: ElevenLabs' text-to-speech models, newest first, as its ``/v1/models`` names them.
ELEVENLABS_MODELS: tuple[tuple[str, str], ...] = (
    ("eleven_multilingual_v2", "Eleven Multilingual v2"),
    ("eleven_flash_v2_5", "Eleven Flash v2.5"),
    ("eleven_turbo_v2_5", "Eleven Turbo v2.5"),
    ("eleven_v3", "Eleven v3"),
    ("eleven_flash_v2", "Eleven Flash v2"),
    ("eleven_turbo_v2", "Eleven Turbo v2"),
    ("eleven_multilingual_v1", "Eleven Multilingual v1"),
    ("eleven_monolingual_v1", "Eleven English v1"),
)


def model_aliases(versions: Iterable[ModelVersion]) -> list[ModelAlias]:
    """The ElevenLabs ids, each mapped to ``versions`` (the active versions serving a tenant's
    voices); none when no model serves it (nothing could answer them)."""
    served = list(versions)
    if not served:
        return []
    model_ids = tuple(dict.fromkeys(v.model_id for v in served))
    languages = tuple(dict.fromkeys(code for v in served for code in v.languages or ()))
    return [ModelAlias(model_id, name, model_ids, languages) for model_id, name in ELEVENLABS_MODELS]
