"""Stage 2 of the pipeline, resolve: the voice this tenant may use, the model version that
serves it, the language it speaks and the dictionaries that apply (looked up, not applied).
"""

from __future__ import annotations

import dataclasses
import logging

from django.conf import settings

from accounts.quota import characters_per_request_limit
from tts.catalogue import active_model_version, voice_and_active_version
from tts.errors import SynthesisError
from tts.models import ModelVersion, Voice
from tts.pronunciation import dictionaries_for
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.runs.run import SynthesisRun
from tts.synthesis.stages.parse import readable_languages, speaking_language, validate_text
from tts.synthesis.stages.values import Resolved, ResolvedTurn

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
    language, and the dictionaries that apply (looked up only: applying them is work, after admission).
    A dialogue's turns are resolved each with its own voice (``resolve_turns``)."""
    if req.turns is not None:
        return resolve_turns(req)
    text = validate_text(req.text, tenant=req.tenant, field=req.text_field)
    voice, model_version = resolve_voice(req)
    language = language_of(text, req, voice, model_version)
    dictionaries = dictionaries_for(req.tenant, req.pronunciation_dictionary_locators)
    return Resolved(req, text, voice, model_version, language, dictionaries)


def resolve_turns(req: SynthesisRequest, *, limit: int | None = None, per: str = "request") -> Resolved:
    """Stage 2 for a dialogue (``req.turns``, ElevenLabs' ``inputs``): each turn's text checked, its
    voice (visible to the tenant) and the language that voice speaks it in; the dictionaries once for
    all. Bounds, each a 4xx naming the field: at least one turn and at most ``TTS_DIALOGUE_MAX_INPUTS``,
    at most ``TTS_DIALOGUE_MAX_VOICES`` distinct voices, every text non-blank, and all the texts
    together within the plan's characters per request. The voices must share one model version (one
    engine and sample rate make the one synthesis): a 422 naming the first that does not.

    ``limit``: the characters all the turns may hold, ``per`` what it is a limit of (a long-form job
    passes its plan's ``job_max_characters``, "job"); else the plan's per request."""
    turns = req.turns or []
    if not turns:
        raise SynthesisError(
            "'inputs' must hold at least one {text, voice_id}.", code="empty_inputs", status=400, field="inputs"
        )
    if len(turns) > settings.TTS_DIALOGUE_MAX_INPUTS:
        raise SynthesisError(
            f"'inputs' holds {len(turns)} turns; a dialogue may hold at most {settings.TTS_DIALOGUE_MAX_INPUTS}.",
            code="too_many_inputs",
            status=400,
            field="inputs",
        )
    distinct = list(dict.fromkeys(turn.voice_id for turn in turns))
    if len(distinct) > settings.TTS_DIALOGUE_MAX_VOICES:
        raise SynthesisError(
            f"'inputs' uses {len(distinct)} distinct voices; a dialogue may use at most "
            f"{settings.TTS_DIALOGUE_MAX_VOICES}.",
            code="too_many_voices",
            status=400,
            field="inputs",
        )
    limit = characters_per_request_limit(req.tenant.plan) if limit is None else limit
    texts = [
        validate_text(turn.text, tenant=req.tenant, field=f"inputs[{i}].text", limit=limit)
        for i, turn in enumerate(turns)
    ]
    total = sum(len(text) for text in texts)
    if total > limit:
        raise SynthesisError(
            f"'inputs' holds {total} characters of text; the limit per {per} is {limit}.",
            code="max_character_limit_exceeded",
            status=413,
            field="inputs",
        )
    voices: dict[str, tuple[Voice, ModelVersion]] = {}
    resolved: list[ResolvedTurn] = []
    for i, (turn, text) in enumerate(zip(turns, texts, strict=True)):
        if turn.voice_id not in voices:
            field = f"inputs[{i}].voice_id"
            voice, version = resolve_voice(dataclasses.replace(req, voice_id=turn.voice_id, voice_field=field))
            first_version = next(iter(voices.values()), (voice, version))[1]
            if version.pk != first_version.pk:
                raise SynthesisError(
                    f"Voice '{voice.voice_id}' is served by model '{version.model_id}'; a dialogue's voices "
                    f"must share one model, and the first turn's is '{first_version.model_id}'.",
                    code="dialogue_models_differ",
                    status=422,
                    field=field,
                )
            voices[turn.voice_id] = (voice, version)
        voice, version = voices[turn.voice_id]
        resolved.append(ResolvedTurn(i, f"inputs[{i}].text", text, voice, language_of(text, req, voice, version)))
    dictionaries = dictionaries_for(req.tenant, req.pronunciation_dictionary_locators)
    first = resolved[0]
    version = voices[turns[0].voice_id][1]
    return Resolved(req, req.text, first.voice, version, first.language, dictionaries, tuple(resolved))


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
