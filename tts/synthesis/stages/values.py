"""The typed values the pipeline's stages hand each other (``tts.synthesis.stages.pipeline``).

Each stage takes the previous stage's value and returns the next one, so a reader sees
what is known at each point: ``Resolved`` (who speaks, in which language) ->
``Admitted`` (the rate limits passed) -> ``Prepared`` (the text as it will be spoken,
in segments, checked against the audio limit) -> ``Found`` (the cache's answer and what
is held). The run (``tts.synthesis.runs.run.SynthesisRun``) comes out of the last stage.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the stages' modules import these values, not the reverse
    from tts.models import ModelVersion, Voice
    from tts.pronunciation import AppliedDictionaries
    from tts.synthesis.alignment.timestamps import SegmentContext
    from tts.synthesis.alignment.voice_segments import TurnSpan
    from tts.synthesis.cache.audio import CachedAudio
    from tts.synthesis.engine_time.admission import SynthesisAdmission
    from tts.synthesis.engine_time.budget import EngineBudget
    from tts.synthesis.request import SynthesisRequest
    from tts.text.segment import Segment


@dataclass(frozen=True)
class ResolvedTurn:
    """One turn of a dialogue: its checked text (the caller's ``field``), the voice that speaks it
    (served by the dialogue's one model version) and the language it is spoken in."""

    index: int
    field: str
    text: str
    voice: Voice
    language: str


@dataclass(frozen=True)
class Resolved:
    """The request with its checked text, its voice and model version, and what applies to it.

    A dialogue (``SynthesisRequest.turns``) has its ``turns``, each with its voice and language;
    ``voice`` and ``language`` are then its first turn's, ``text`` all of them."""

    request: SynthesisRequest
    text: str
    voice: Voice
    model_version: ModelVersion
    language: str
    dictionaries: AppliedDictionaries | None
    turns: tuple[ResolvedTurn, ...] = ()


@dataclass(frozen=True)
class Admitted:
    """A resolved request past the rate limits; holds what ``admission`` holds until it is released."""

    resolved: Resolved
    admission: SynthesisAdmission

    @contextlib.contextmanager
    def released_on_error(self) -> Iterator[None]:
        """Give back what the admission holds if the stages inside fail (nothing is held when they raise)."""
        try:
            yield
        except BaseException:
            self.admission.release()
            raise


@dataclass(frozen=True)
class Prepared:
    """The text as it will be spoken (dictionaries applied), in segments, with its stitching context
    and the engine time it may spend (``tts.synthesis.engine_time.budget``)."""

    admitted: Admitted
    spoken: str
    segments: list[Segment]
    context: SegmentContext | None
    engine_budget: EngineBudget | None = None
    #: The characters it bills (``tts.synthesis.stages.prepare.prepare_text``).
    billed: int = 0
    #: A dialogue's turns: where each is in the spoken text (its alignment's characters) and its voice.
    turn_spans: tuple[TurnSpan, ...] = ()


@dataclass(frozen=True)
class Found:
    """The cache's answer for a prepared request: its key and entry (``None`` on a miss)."""

    prepared: Prepared
    cache_key: str | None
    cached: CachedAudio | None
    whole: bool
