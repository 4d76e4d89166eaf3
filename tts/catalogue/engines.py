"""The process-wide engine registry, built from settings, and model-version snapshots."""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.conf import settings

from tts.inference.engine import ModelSpec
from tts.inference.pacing import set_lead_margin
from tts.inference.registry import EngineRegistry
from tts.inference.work_pool import set_worker_nice
from tts.models import ModelVersion

#: Run once, before the process builds its registry: the synthesis package adds its engine
#: fairness set-up here (``tts.synthesis.engine_time.fairness``), since the catalogue never imports it.
REGISTRY_HOOKS: list[Callable[[], None]] = []


@functools.cache
def get_registry() -> EngineRegistry:
    set_worker_nice(settings.TTS_ENGINE_NICE)
    set_lead_margin(settings.TTS_STREAM_LEAD_MARGIN_MS / 1000)
    for hook in REGISTRY_HOOKS:
        hook()
    return EngineRegistry(
        settings.TTS_ENGINES, threads=settings.TTS_ENGINE_THREADS, max_loaded=settings.TTS_ENGINE_MAX_LOADED
    )


def spec_for(model_version: ModelVersion) -> ModelSpec:
    return ModelSpec(
        id=model_version.pk,
        engine=model_version.engine,
        model_path=model_version.model_path,
        config_path=model_version.config_path,
        sha256=model_version.sha256,
        device=model_version.device,
        options=dict(model_version.options or {}),
    )
