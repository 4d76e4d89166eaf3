"""Stage 4 of the pipeline, prepare the text: the tenant's dictionaries applied, the text
normalized and cut into segments in its language (a stream's first sentence also at its
first pause, on an engine that makes a sentence's audio only whole), the stitching context
read, and the audio it will make and the engine time it will take checked against the
request's limits before any engine work."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings

from tts.catalogue import get_registry
from tts.pronunciation import billed_characters
from tts.synthesis.alignment.voice_segments import TurnSpan
from tts.synthesis.engine_time.budget import EngineBudget, engine_budget_admit
from tts.synthesis.request import TURN_SEPARATOR
from tts.synthesis.stages.estimate import check_audio_estimate, effective_speed
from tts.synthesis.stages.parse import segments_for
from tts.synthesis.stages.prepared_billing import UtteranceBill, billed_for_prepared
from tts.synthesis.stages.stitching import context_characters, stitching_context
from tts.synthesis.stages.values import Admitted, Prepared, Resolved
from tts.text.first_clause import split_first_clause
from tts.text.segment import Segment

if TYPE_CHECKING:
    from tts.pronunciation import AppliedDictionaries


@dataclass(frozen=True)
class PreparedText:
    """One text as it will be spoken: ``field`` (the caller's name for it), in ``language``, the
    dictionaries applied (``spoken``), cut into ``segments``, and the characters it bills."""

    field: str
    text: str
    language: str | None
    spoken: str
    segments: list[Segment]
    billed: int


def prepare_text(
    text: str,
    *,
    field: str,
    language: str | None,
    dictionaries: AppliedDictionaries | None,
    normalization: str,
    require_speech: bool = True,
    drop_blank: bool = False,
) -> PreparedText:
    """The one text-preparing step of every way in (a request's text, a live utterance's piece, each
    text of a job): the tenant's dictionaries applied, the text normalized and cut into segments in
    its language, and the characters billed (``billed_for_prepared``: the longer of the text and its
    spoken form, and the prepared text past its free expansion). Errors name ``field``."""
    spoken = dictionaries.apply(text, field=field) if dictionaries is not None else text
    segments = segments_for(
        spoken,
        language=language,
        normalization=normalization,
        field=field,
        require_speech=require_speech,
        drop_blank=drop_blank,
    )
    billed = billed_for_prepared(billed_characters(text, spoken), segments)
    return PreparedText(field, text, language, spoken, segments, billed)


def prepare(admitted: Admitted, *, streamed: bool = False) -> Prepared:
    """The text as it will be spoken, in segments, with its context; refused here if too long to make.

    ``streamed``: the audio goes out as it is made (not a whole file), so the first sentence's
    first clause is made alone where that brings the first audio sooner (``first_clause_first``).
    """
    resolved = admitted.resolved
    req = resolved.request
    if resolved.turns:
        prepared, spans = prepare_turns(resolved)
    else:
        prepared = prepare_text(
            resolved.text,
            field=req.text_field,
            language=resolved.language,
            dictionaries=resolved.dictionaries,
            normalization=req.normalization,
        )
        spans = ()
    spoken, segments = prepared.spoken, prepared.segments
    if streamed:
        segments = first_clause_first(segments, resolved.model_version.engine)
    context = stitching_context(req)
    check_audio_estimate(req, segments, context_chars=context_characters(context))
    budget = admit_engine_time(resolved, segments, context_chars=context_characters(context))
    return Prepared(admitted, spoken, segments, context, budget, prepared.billed, spans)


def prepare_turns(resolved: Resolved) -> tuple[PreparedText, tuple[TurnSpan, ...]]:
    """A dialogue's turns through the one text step (``prepare_text``), each in its own language,
    as one text: the turns' spoken texts one after the other (``TURN_SEPARATOR`` between), their
    segments marked with their turn (whose voice speaks them, ``SynthesisRun.voice_for``) and placed in
    that text, ``TTS_DIALOGUE_PAUSE_MS`` of silence after each turn but the last, and where each turn
    is (``TurnSpan``: the voice segments of its alignment). It bills as one text by the prepared-text
    rule (the turns' characters, one free expansion for the whole dialogue), as a live utterance's
    pieces do."""
    req = resolved.request
    pause = settings.TTS_DIALOGUE_PAUSE_MS
    segments: list[Segment] = []
    spoken: list[str] = []
    spans: list[TurnSpan] = []
    billed = 0
    offset = 0
    for turn in resolved.turns:
        prepared = prepare_text(
            turn.text,
            field=turn.field,
            language=turn.language,
            dictionaries=resolved.dictionaries,
            normalization=req.normalization,
        )
        placed = [
            dataclasses.replace(
                seg,
                source_start=seg.source_start + offset if seg.source_start >= 0 else -1,
                source_end=seg.source_end + offset if seg.source_start >= 0 else -1,
                turn=turn.index,
            )
            for seg in prepared.segments
        ]
        if placed and turn.index < len(resolved.turns) - 1:
            placed[-1] = dataclasses.replace(placed[-1], pause_after_ms=placed[-1].pause_after_ms + pause)
        segments.extend(placed)
        spoken.append(prepared.spoken)
        spans.append(TurnSpan(turn.index, turn.voice.voice_id, offset, offset + len(prepared.spoken)))
        billed += billed_characters(prepared.text, prepared.spoken)
        offset += len(prepared.spoken) + len(TURN_SEPARATOR)
    text = TURN_SEPARATOR.join(turn.text for turn in resolved.turns)
    whole = PreparedText(
        "inputs", text, resolved.language, TURN_SEPARATOR.join(spoken), segments, billed_for_prepared(billed, segments)
    )
    return whole, tuple(spans)


def prepare_piece(
    resolved: Resolved, *, budget: EngineBudget | None, bill: UtteranceBill
) -> tuple[PreparedText, UtteranceBill]:
    """Stage 4 for one more piece of a live utterance: the same text step as a request's, the
    engine time it will take checked against what the utterance has left (``budget``), and what it
    bills as part of the utterance (``bill``: the pieces so far; the prepared text's free
    expansion is the utterance's, not each piece's). Returns the piece and the utterance's bill
    with it. A piece with nothing to speak (a space, punctuation) is not an error: it has no segments."""
    req = resolved.request
    prepared = prepare_text(
        resolved.text,
        field=req.text_field,
        language=resolved.language,
        dictionaries=resolved.dictionaries,  # compiled for the first piece: applying them is one pass
        normalization=req.normalization,
        require_speech=False,
        drop_blank=True,
    )
    if prepared.segments and budget is not None:
        admit_engine_time(resolved, prepared.segments, budget=budget)
    billed, after = bill.with_piece(billed_characters(prepared.text, prepared.spoken), prepared.segments)
    return dataclasses.replace(prepared, billed=billed), after


def admit_engine_time(
    resolved: Resolved, segments: list[Segment], *, context_chars: int = 0, budget: EngineBudget | None = None
) -> EngineBudget:
    """The engine time ``segments`` will take, checked before any engine work against the request's
    budget (a new one), or against ``budget`` (what a live utterance has left): a 413 naming the limit."""
    req = resolved.request
    return engine_budget_admit(
        req,
        resolved.model_version.engine,
        segments,
        functools.partial(effective_speed, req.speed),
        context_chars=context_chars,
        language=resolved.language,
        budget=budget,
    )


def first_clause_first(segments: list[Segment], engine: str) -> list[Segment]:
    """``segments`` with the first cut after its first clause (``tts.text.first_clause``) when
    ``engine`` makes a sentence's audio only whole (``cuts_first_clause``: Kokoro)."""
    min_letters = settings.TTS_FIRST_CLAUSE_MIN_CHARS
    if not segments or min_letters <= 0 or not get_registry().engine_trait(engine, "cuts_first_clause"):
        return segments
    pieces = split_first_clause(segments[0], min_letters=min_letters, pause_ms=settings.TTS_FIRST_CLAUSE_PAUSE_MS)
    return segments if pieces is None else [*pieces, *segments[1:]]
