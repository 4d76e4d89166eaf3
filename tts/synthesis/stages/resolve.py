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
from tts.synthesis.runs.run import SynthesisRun
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
    language = language_of(text, req, voice, model_version)
    dictionaries = dictionaries_for(req.tenant, req.pronunciation_dictionary_locators)
    return Resolved(req, text, voice, model_version, language, dictionaries)


def resolve_piece(run: SynthesisRun, text: str) -> Resolved:
    """Stage 2 for one more piece of a live utterance (a WebSocket's text, a Wyoming chunk): the
    checked text in its own language, which a piece that does not say keeps from the utterance
    (a Piper voice refuses another script, as for a request). The voice, its model version and the
    dictionaries are the utterance's, resolved with its first piece."""
    req = run.request
    checked = validate_text(text, tenant=req.tenant, field=req.text_field)
    spoken = next((seg.language for seg in run.segments if seg.language), None)
    language = language_of(checked, req, run.voice, run.model_version, before=spoken)
    return Resolved(req, checked, run.voice, run.model_version, language, run.dictionaries)


def language_of(
    text: str, req: SynthesisRequest, voice: Voice, version: ModelVersion, *, before: str | None = None
) -> str:
    """The language ``text`` is spoken in: the caller's ``language_code`` if the voice reads it,
    else the text's own script among the voice's languages, ``before`` (what the utterance spoke so
    far) first. A 400 naming the field if the voice cannot read it."""
    readable = readable_languages(voice, version)
    return speaking_language(text, [before, *readable] if before else readable, req.language)
