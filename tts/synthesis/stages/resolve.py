"""Stage 2 of the pipeline, resolve: the voice this tenant may use, the model version that
serves it, the language it speaks and the dictionaries that apply (looked up, not applied).
"""

from __future__ import annotations

import logging

from tts.catalogue import active_model_version, voice_and_active_version
from tts.errors import SynthesisError
from tts.models import ModelVersion, Voice
from tts.pronunciation import dictionaries_for
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.stages.parse import readable_languages, speaking_language, validate_text
from tts.synthesis.stages.values import Resolved

logger = logging.getLogger(__name__)


# Model ids of other vendors' SDK defaults; accepted and served by the voice's own model.
FOREIGN_MODEL_PREFIXES = ("eleven_", "tts-1", "gpt-4o", "gpt-")


def resolve_model(req: SynthesisRequest, voice: Voice, version: ModelVersion | None) -> ModelVersion:
    """The version that serves ``req``: ``version``, the active one of the voice's model, if ``req`` allows."""
    model_id = (req.model_id or "").strip()
    if model_id and model_id != voice.model_id and not model_id.startswith(FOREIGN_MODEL_PREFIXES):
        known = ModelVersion.objects.filter(model_id=model_id).exists()
        if not known:
            models = sorted(set(ModelVersion.objects.filter(status="active").values_list("model_id", flat=True)))
            raise SynthesisError(
                f"{req.model_field}: unknown model '{model_id}'. Available models: {', '.join(models) or 'none'}.",
                code="model_not_found",
                status=400,
                field=req.model_field,
            )
        raise SynthesisError(
            f"Voice '{voice.voice_id}' is served by model '{voice.model_id}', not '{model_id}'.",
            code="model_voice_mismatch",
            status=400,
            field=req.model_field,
        )
    if version is None:
        raise SynthesisError(
            f"The model '{voice.model_id}' behind voice '{voice.voice_id}' has no active version.",
            code="model_unavailable",
            status=503,
            retry_after=30,
        )
    return version


def resolve_model_version(req: SynthesisRequest, voice: Voice) -> ModelVersion:
    """The active model version that serves ``voice`` for ``req``; ``SynthesisError`` if none fits."""
    return resolve_model(req, voice, active_model_version(voice.model_id))


def resolve_voice(req: SynthesisRequest) -> tuple[Voice, ModelVersion]:
    """The voice ``req`` names (visible to its tenant) and the model version that serves it: a 404
    naming the voice field, or the model's errors (``resolve_model``). Requests and jobs alike."""
    voice, active = voice_and_active_version(req.tenant, req.voice_id)
    if voice is None:
        raise SynthesisError(
            f"A voice with voice_id '{req.voice_id}' was not found.",
            code="voice_not_found",
            status=404,
            field=req.voice_field,
        )
    return voice, resolve_model(req, voice, active)


def resolve(req: SynthesisRequest) -> Resolved:
    """The checked text, the voice ``req`` names (visible to its tenant), its model version and
    language, and the dictionaries that apply (looked up only: applying them is work, after admission)."""
    text = validate_text(req.text, tenant=req.tenant, field=req.text_field)
    voice, model_version = resolve_voice(req)
    language = speaking_language(text, readable_languages(voice, model_version), req.language)
    dictionaries = dictionaries_for(req.tenant, req.pronunciation_dictionary_locators)
    return Resolved(req, text, voice, model_version, language, dictionaries)
