"""Stage 4 of the pipeline, prepare the text: the tenant's dictionaries applied, the text
normalized and cut into segments in its language, the stitching context read, and the
audio it will make and the engine time it will take checked against the request's limits
before any engine work."""

from __future__ import annotations

import functools

from tts.synthesis.engine_budget import engine_budget_admit
from tts.synthesis.estimate import check_audio_estimate, effective_speed
from tts.synthesis.parse import segments_for
from tts.synthesis.stages import Admitted, Prepared
from tts.synthesis.stitching import context_characters, stitching_context


def prepare(admitted: Admitted) -> Prepared:
    """The text as it will be spoken, in segments, with its context; refused here if too long to make."""
    resolved = admitted.resolved
    req, text, dictionaries = resolved.request, resolved.text, resolved.dictionaries
    spoken = dictionaries.apply(text, field=req.text_field) if dictionaries is not None else text
    segments = segments_for(spoken, language=resolved.language, normalization=req.normalization, field=req.text_field)
    context = stitching_context(req)
    check_audio_estimate(req, segments, context_chars=context_characters(context))
    budget = engine_budget_admit(
        req,
        resolved.model_version.engine,
        segments,
        functools.partial(effective_speed, req.speed),
        context_chars=context_characters(context),
        language=resolved.language,
    )
    return Prepared(admitted, spoken, segments, context, budget)
