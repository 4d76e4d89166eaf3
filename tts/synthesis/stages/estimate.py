"""How much audio a prepared request will make, checked before any work starts: the speed
rule (the caller's speed times SSML's rate, within bounds) and the per-request audio limit.
"""

from __future__ import annotations

import logging

from django.conf import settings

from accounts.quota import audio_seconds_limit
from tts.errors import SynthesisError
from tts.synthesis.request import SynthesisRequest
from tts.text.segment import Segment

logger = logging.getLogger(__name__)


def effective_speed(speed: float, segment: Segment) -> float:
    """The caller's speed times the segment's own (SSML) rate, within ``TTS_MIN_SPEED``..``TTS_MAX_SPEED``.

    The floor bounds the work one billed character can cause: below it, speech is
    slowed no further (OpenAI's 0.25 times SSML's 25 % would otherwise be 16x).
    """
    return min(settings.TTS_MAX_SPEED, max(settings.TTS_MIN_SPEED, speed * segment.rate))


def audio_estimate(speed: float, segments: list[Segment], silence: int) -> float:
    """A low estimate of the seconds of audio ``segments`` make (speech at a brisk pace, every pause)."""
    per_char = settings.TTS_AUDIO_SECONDS_PER_CHAR_MIN
    return sum(
        len(seg.text) * per_char / effective_speed(speed, seg) + (seg.pause_after_ms + silence) / 1000
        for seg in segments
    )


def check_audio_estimate(req: SynthesisRequest, segments: list[Segment], *, context_chars: int = 0) -> None:
    """Refuse up front a request sure to make more audio than one request may (the pipeline
    also stops one that turns out longer than predicted, refunding what was not spoken).

    ``context_chars``: stitching context synthesized beside the text (and cut away) is engine
    work too, and counts at the caller's speed."""
    limit = audio_seconds_limit(req.tenant.plan)
    estimate = audio_estimate(req.speed, segments, req.silence_ms)
    if context_chars:
        estimate += context_chars * settings.TTS_AUDIO_SECONDS_PER_CHAR_MIN / max(0.05, req.speed)
    if estimate > limit:
        raise audio_limit_error(req, limit, f"would make at least {estimate:.0f} s of audio")


def audio_limit_error(req: SynthesisRequest, limit: float, what: str) -> SynthesisError:
    return SynthesisError(
        f"'{req.text_field}' {what}; the limit per request is {limit:.0f} s (slow speech, long breaks and "
        "numbers spoken in full all add up).",
        code="audio_limit_exceeded",
        status=413,
        field=req.text_field,
    )
