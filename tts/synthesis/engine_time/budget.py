"""Engine time per request: the plan's budget in engine-seconds, checked before work and charged as it goes.

A request's engine time is its audio times its engine's cost factor (``engine_cost``: Kokoro spends
about ten times Piper's engine-seconds per second of audio). Two checks, like the audio limit's:

* **up front** (``engine_budget_admit``, in ``synthesis_prepare`` and for each later piece of a live
  stream): a low estimate of the audio the prepared segments make (after normalization: English
  digits are already words; phoneme blocks count by their length; SSML rate and the caller's speed,
  within the speed floor, divide; the stitching context is synthesized too; Han, kana, Devanagari
  and the digits a front end reads itself weighted as the syllables and words they are), times the
  factor. Over the budget: 413 ``engine_time_exceeded``, before a slot, an engine ticket, a
  character or a history record is taken;
* **as it goes** (``EngineBudget.charge``, in the synthesis loop every engine piece passes): each
  second of speech made is charged at the factor (silence after a sentence is not engine work); the
  run stops with the same code once the sum passes the budget, and bills what was delivered. A
  stream-input WebSocket is one run, so its budget is the connection's, summed over its pieces.

The budget is ``Plan.max_engine_seconds_per_request``, else ``TTS_MAX_ENGINE_SECONDS_PER_REQUEST``.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Sequence

from django.conf import settings

from accounts.models import Plan
from tts.errors import SynthesisError
from tts.inference.kokoro_blocks import phonemize_with_blocks
from tts.synthesis.engine_time.cost import engine_cost_factor, estimate_engine_seconds
from tts.synthesis.request import SynthesisRequest
from tts.text.g2p import g2p_for, has_g2p
from tts.text.segment import Segment

CODE = "engine_time_exceeded"

#: Characters that take longer to say than a Latin letter (about 0.055 s), as so many letters: a Han
#: character or kana is a syllable (0.15-0.2 s); a Devanagari letter about 0.09 s; a digit that a front
#: end reads itself (English's normalization has made words of them already) a word ("sette", "सात").
WEIGHTS = (
    (re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]"), 3),
    (re.compile("[\u0900-\u097f]"), 2),
    (re.compile("[0-9\u0966-\u096f\uff10-\uff19]"), 5),
)


#: Characters of a front end's output that take no time of their own.
_NOT_SPOKEN = frozenset(";:,.!?¡¿—…\"«»“”()[] ˈˌːˑ→↗↘↓↑'-")


class _AnyPhoneme:
    """Every symbol of a phoneme block counts (the engine's vocabulary is not known here)."""

    def __contains__(self, item: object) -> bool:
        return True


_ANY_PHONEME = _AnyPhoneme()

#: A character may become this many phonemes (a capital spelled, a digit read in a number, a symbol
#: named): below it, the character estimate decides and the front end is not asked.
PHONEME_EXPANSION = 10


def engine_seconds_limit(plan: Plan) -> float:
    """The engine-seconds one request may spend on ``plan``: its own budget, else the deployment's."""
    own = plan.max_engine_seconds_per_request
    return float(own) if own is not None else float(settings.TTS_MAX_ENGINE_SECONDS_PER_REQUEST)


def job_engine_seconds_limit(plan: Plan) -> float:
    """The engine-seconds one job may spend on ``plan``: its own budget, else the deployment's."""
    own = plan.max_engine_seconds_per_job
    return float(own) if own is not None else float(settings.TTS_MAX_ENGINE_SECONDS_PER_JOB)


def spoken_characters(text: str) -> int:
    """``text``'s length for the audio estimate, each character weighted as ``WEIGHTS`` says (else 1)."""
    return len(text) + sum((weight - 1) * len(pattern.findall(text)) for pattern, weight in WEIGHTS)


def spoken_phonemes(text: str, language: str) -> int | None:
    """The phonemes ``language``'s front end makes of ``text`` (stress, length and tone marks aside);
    None without a front end, or when it fails (the character estimate stands)."""
    if not has_g2p(language):
        return None
    try:
        phonemes = phonemize_with_blocks(g2p_for(language), text, _ANY_PHONEME).phonemes
    except Exception:  # the estimate never fails a request; the engine's own door will say why
        return None
    return sum(1 for ch in phonemes if ch not in _NOT_SPOKEN)


def low_speech_seconds(
    segments: Sequence[Segment],
    speed_of: Callable[[Segment], float],
    *,
    language: str | None = None,
    phonemes_past: float = math.inf,
    stop_past: float = math.inf,
) -> float:
    """A low estimate of the seconds of speech ``segments`` make (brisk pace; pauses are not speech).

    From the characters; and when that, times ``PHONEME_EXPANSION``, passes ``phonemes_past`` seconds
    (the request could reach its budget), also from the phonemes the segment's front end makes of
    them, the larger: digits a front end reads itself, letters it spells, symbols it names all count.
    ``stop_past``: an estimate past it refuses the request anyway, so the front end is asked no more
    once the characters alone, or the segments read so far with the rest by their characters, pass it
    (what is returned is then past ``stop_past``, not the whole estimate).
    """
    per_char = settings.TTS_AUDIO_SECONDS_PER_CHAR_MIN
    by_chars = [spoken_characters(seg.text) * per_char / speed_of(seg) for seg in segments]
    chars_total = sum(by_chars)
    if chars_total * PHONEME_EXPANSION <= phonemes_past or chars_total > stop_past:
        # Either the phonemes could not reach the budget, or the characters alone already pass it:
        # the front end is not asked (a refused request spends no phoneme work, #41 item 7).
        return chars_total
    per_phoneme = settings.TTS_AUDIO_SECONDS_PER_PHONEME_MIN
    total = 0.0
    rest = chars_total
    for seg, estimate in zip(segments, by_chars, strict=True):
        rest -= estimate
        lang = seg.language or language
        phonemes = spoken_phonemes(seg.text, lang) if lang else None
        total += max(estimate, (phonemes or 0) * per_phoneme / speed_of(seg))
        if total + rest > stop_past:
            return total + rest  # past the budget already: the rest's phonemes change nothing
    return total


class EngineBudget:
    """The engine-seconds one run may spend (``limit``) on ``engine``, and what it spent. Thread-safe."""

    def __init__(
        self, request: SynthesisRequest, engine: str, limit: float, *, made: float = 0.0, unit: str = "request"
    ) -> None:
        self.request = request
        self.engine = engine
        self.limit = limit
        #: Engine-seconds per second of audio on ``engine`` (``tts.synthesis.engine_time.cost``), read once.
        self.factor = engine_cost_factor(engine)
        #: Engine-seconds spent: ``made`` seconds of audio already made (a resumed job) at the factor.
        self.spent = made * self.factor
        #: What the budget is of, in its error: "request", or "job" (``tts.synthesis.stages.job``).
        self.unit = unit
        self._lock = threading.Lock()

    def admit(self, estimate: float) -> None:
        """Refuse (``SynthesisError``) work of ``estimate`` engine-seconds that the budget's rest cannot take."""
        with self._lock:
            if self.spent + estimate > self.limit:
                raise self.error(f"would take at least {self.spent + estimate:.1f} engine-seconds")

    def charge(self, audio_seconds: float, *, slack: float = 0.0) -> None:
        """Charge ``audio_seconds`` made at the engine's factor; ``SynthesisError`` once past the budget.

        ``slack``: seconds of this audio that may be silence (a sentence's pause), not counted against
        the budget until :meth:`credit` settles them."""
        factor = self.factor
        with self._lock:
            self.spent += audio_seconds * factor
            over = self.spent - slack * factor > self.limit
        if over:
            raise self.error(f"took more than {self.limit:g} engine-seconds")

    def credit(self, audio_seconds: float) -> None:
        """Give back ``audio_seconds`` charged that were silence, not engine work."""
        with self._lock:
            self.spent = max(0.0, self.spent - audio_seconds * self.factor)

    def error(self, what: str) -> SynthesisError:
        req = self.request
        return SynthesisError(
            f"'{req.text_field}' {what} on voice '{req.voice_id}' ({self.engine}); a {self.unit} may take "
            f"{self.limit:g} engine-seconds on this plan. Send a shorter text, a faster speed (or SSML rate), "
            "or use a voice on a faster engine.",
            code=CODE,
            status=413,
            field=req.text_field,
        )


def engine_budget_admit(
    request: SynthesisRequest,
    engine: str,
    segments: Sequence[Segment],
    speed_of: Callable[[Segment], float],
    *,
    context_chars: int = 0,
    budget: EngineBudget | None = None,
    language: str | None = None,
) -> EngineBudget:
    """The run's budget (``budget``, else a new one from the plan), once the estimate of ``segments``
    (and ``context_chars`` of stitching context at the caller's speed) fits in what is left of it."""
    if budget is None:
        budget = EngineBudget(request, engine, engine_seconds_limit(request.tenant.plan))
    left = max(0.0, budget.limit - budget.spent) / budget.factor  # seconds of audio
    audio = low_speech_seconds(segments, speed_of, language=language, phonemes_past=left, stop_past=left)
    if context_chars:
        audio += context_chars * settings.TTS_AUDIO_SECONDS_PER_CHAR_MIN / max(settings.TTS_MIN_SPEED, request.speed)
    budget.admit(estimate_engine_seconds(engine, audio))
    return budget
