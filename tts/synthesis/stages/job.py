"""A long-form job's texts through the pipeline's stages: resolve, prepare, the engine budget.

A job is a synthesis like any request, with longer texts and its chunks run later by a worker
(``tts.jobs``). Its texts go through the same stages a request's do, not copies of them:

* resolve (``resolve.resolve_voice``, ``tts.pronunciation.dictionaries_for``): the voice, its model
  version, the language of each text, and the dictionaries that apply (an unknown one is a 400
  naming ``pronunciation_dictionary_locators``; none named: the tenant's defaults);
* prepare (``prepare.prepare_text``, the step a request's text and a live utterance's piece go
  through too): the dictionaries applied, the text as it will be spoken in segments, billed as a
  request is (the longer of the text and its spoken form, and the prepared text past its free
  expansion);
* the engine-time budget (``engine_budget``): ``Plan.max_engine_seconds_per_job``, else
  ``TTS_MAX_ENGINE_SECONDS_PER_JOB``. The low estimate of every text is checked before the job is
  queued (413 ``engine_time_exceeded`` naming the field and the limit); the runner charges each
  segment it makes (``job_engine_budget``) and stops the job at the budget.

A dialogue job (text-to-dialogue's ``inputs``, docs/dialogue.md) goes through the dialogue's own
steps: ``resolve_turns`` (its bounds, with the job's total characters instead of a request's) and
``prepare_turns`` (each turn's segments marked with their turn, billed as the dialogue routes bill).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from tts.models import ModelVersion, Voice
from tts.pronunciation import AppliedDictionaries, dictionaries_for
from tts.synthesis.engine_time.budget import EngineBudget, engine_budget_admit, job_engine_seconds_limit
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.stages.estimate import effective_speed
from tts.synthesis.stages.prepare import PreparedText, prepare_text, prepare_turns
from tts.synthesis.stages.resolve import language_of, resolve_turns, resolve_voice
from tts.synthesis.stages.values import Resolved, ResolvedTurn


@dataclass(frozen=True)
class PreparedJob:
    """A job's texts resolved and prepared, within the job's engine budget."""

    voice: Voice
    model_version: ModelVersion
    dictionaries: AppliedDictionaries | None
    texts: list[PreparedText]
    engine_budget: EngineBudget
    #: A dialogue job's turns (each with its voice); its one text's segments carry their turn.
    turns: tuple[ResolvedTurn, ...] = ()

    @property
    def characters(self) -> int:
        """What the job bills: each text's billed characters."""
        return sum(t.billed for t in self.texts)


def job_resolve(req: SynthesisRequest) -> tuple[Voice, ModelVersion, AppliedDictionaries | None]:
    """Stage 2 for a job: its voice and model version, and the dictionaries that apply (looked up only)."""
    voice, model_version = resolve_voice(req)
    return voice, model_version, dictionaries_for(req.tenant, req.pronunciation_dictionary_locators)


def job_prepare(
    req: SynthesisRequest,
    texts: Sequence[tuple[str, str]],
    voice: Voice,
    model_version: ModelVersion,
    dictionaries: AppliedDictionaries | None,
) -> PreparedJob:
    """Stage 4 for a job: each ``(field, text)`` with the dictionaries applied, in segments, billed;
    then the whole job's low engine-time estimate against its budget (``SynthesisError`` 413 naming
    ``req.text_field`` before anything is queued or reserved)."""
    prepared = [
        prepare_text(
            text,
            field=field,
            language=language_of(text, req, voice, model_version),
            dictionaries=dictionaries,
            normalization=req.normalization,
        )
        for field, text in texts
    ]
    # The whole job's low estimate at once (each segment carries its language for the front end,
    # asked only once the characters could reach the budget: engine_budget.low_speech_seconds).
    budget = engine_budget_admit(
        req,
        model_version.engine,
        [seg for item in prepared for seg in item.segments],
        functools.partial(effective_speed, req.speed),
        budget=job_engine_budget(req, model_version.engine),
    )
    return PreparedJob(voice, model_version, dictionaries, prepared, budget)


def dialogue_job_resolve(req: SynthesisRequest) -> Resolved:
    """Stage 2 for a dialogue job (``req.turns``): the dialogue routes' checks and voices, each a 4xx
    naming its field, with the plan's ``job_max_characters`` for all the turns together."""
    return resolve_turns(req, limit=req.tenant.plan.job_max_characters, per="job")


def dialogue_job_prepare(resolved: Resolved) -> PreparedJob:
    """Stage 4 for a dialogue job: its turns as one text (``prepare_turns``, billed as the dialogue
    routes bill it), then its low engine-time estimate against the job's budget (413 naming ``inputs``)."""
    req = resolved.request
    prepared, _spans = prepare_turns(resolved)
    engine = resolved.model_version.engine
    budget = engine_budget_admit(
        req,
        engine,
        prepared.segments,
        functools.partial(effective_speed, req.speed),
        budget=job_engine_budget(req, engine),
    )
    return PreparedJob(
        resolved.voice, resolved.model_version, resolved.dictionaries, [prepared], budget, resolved.turns
    )


def job_engine_budget(req: SynthesisRequest, engine: str, *, audio_seconds: float = 0.0) -> EngineBudget:
    """The job's engine-time budget on ``engine``, ``audio_seconds`` of its audio already made (a
    resumed job) charged at the engine's factor."""
    return EngineBudget(
        req,
        engine,
        job_engine_seconds_limit(req.tenant.plan),
        made=audio_seconds,
        unit="job",
    )
