"""The engine scheduler's rule wired to the platform: settings, and what a segment is expected to cost.

``configure_engine_fairness`` (called once when the process builds its engine
registry: a hook of ``tts.catalogue.engines``) applies the settings to the process's scheduler and engine-seconds
ledger and, with Redis, joins the host's shared ledger
(``tts.synthesis.engine_time.host_share``). ``segment_engine_seconds`` is what one
segment is charged when its run starts (``tts.synthesis.engine_time.cost``'s factor
for the engine times the segment's likely audio); the run's measured CPU
time replaces it when it ends.
"""

from __future__ import annotations

from django.conf import settings

from tts.catalogue import REGISTRY_HOOKS
from tts.inference.cpus import available_cpus
from tts.inference.engine_share import engine_share
from tts.synthesis.engine_time.cost import estimate_engine_seconds
from tts.synthesis.engine_time.scheduler import engine_scheduler
from tts.text.segment import Segment

#: Seconds of speech per character at an ordinary pace (the estimate is replaced by the measured time).
TYPICAL_AUDIO_SECONDS_PER_CHAR = 0.07


def segment_engine_seconds(engine: object, segment: Segment, speed: float = 1.0) -> float:
    """Engine-seconds ``segment`` is expected to take on ``engine`` (its ``name`` picks the cost factor)."""
    audio = len(segment.text) * TYPICAL_AUDIO_SECONDS_PER_CHAR / max(0.05, speed * (segment.rate or 1.0))
    return estimate_engine_seconds(str(getattr(engine, "name", "")), audio)


def configure_engine_fairness() -> None:
    """Apply the settings to this process's engine scheduler and ledger; join the host's ledger."""
    cores = available_cpus()
    engine_scheduler.configure(
        workers=settings.TTS_ENGINE_SCHEDULER_WORKERS or 2 * cores,
        per_tenant=settings.TTS_ENGINE_SCHEDULER_PER_TENANT or cores,
    )
    engine_share.configure(
        half_life_s=settings.TTS_ENGINE_SHARE_HALF_LIFE_S,
        margin_s=settings.TTS_ENGINE_SHARE_MARGIN_MS / 1000,
        demote=settings.TTS_ENGINE_SHARE_DEMOTE,
    )
    from tts.synthesis.engine_time.host_share import start_host_share

    start_host_share()


REGISTRY_HOOKS.append(configure_engine_fairness)
