"""Prometheus metrics of speech synthesis: syntheses by source and status, latency and
time-to-first-byte histograms, characters and audio seconds, cache hits and misses,
syntheses in flight (the engine queue) and the model versions loaded in this process.

Scraped with every other metric of the process at ``/metrics`` (``infra/metrics.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from infra.logging import loggable_text
from tts.catalogue import get_registry
from tts.inference.work_pool import task_counts
from tts.models import SynthesisRecord
from tts.synthesis.engine_time.admission import engine_admission
from tts.synthesis.engine_time.scheduler import engine_scheduler

logger = logging.getLogger("tts.synthesis")

_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 600.0)

SYNTHESES = Counter("tts_syntheses", "Syntheses finished, by source and status.", ["source", "status"])
SYNTHESIS_LATENCY = Histogram(
    "tts_synthesis_latency_seconds", "Whole synthesis time, request to last byte.", ["source"], buckets=_LATENCY_BUCKETS
)
SYNTHESIS_TTFB = Histogram(
    "tts_synthesis_ttfb_seconds", "Time from request to the first audio byte.", ["source"], buckets=_LATENCY_BUCKETS
)
CHARACTERS = Counter("tts_characters", "Characters synthesized (billed), by source.", ["source"])
AUDIO_SECONDS = Counter("tts_audio_seconds", "Seconds of audio produced, by source.", ["source"])
CACHE_REQUESTS = Counter("tts_cache_requests", "Synthesis cache lookups, by result (hit or miss).", ["result"])


# Streams (tts/inference/pacing.py): how far ahead of its listener's playback each chunk went out,
# and chunks that went out after their playback time (counting from the stream's first byte).
STREAM_LEAD = Histogram(
    "tts_stream_lead_seconds",
    "Per chunk sent on a stream: seconds of audio already sent beyond real-time playback from its first byte.",
    buckets=(-1.0, -0.1, 0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 120.0),
)
STREAM_UNDERRUNS = Counter("tts_stream_underruns", "Stream chunks sent after their playback time (an underrun).")


def stream_chunk_sent(lead_s: float, late: bool) -> None:
    """A stream handed a chunk to its connection ``lead_s`` ahead of playback (``StreamLead``'s hook)."""
    STREAM_LEAD.observe(lead_s)
    if late:
        STREAM_UNDERRUNS.inc()


class _CacheHitsPerCpuCollector(Collector):
    """Cache hits per CPU-second this process spent: a figure that does not grow with the core count."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        hits = CACHE_REQUESTS.labels("hit")._value.get()
        cpu = time.process_time()
        family = GaugeMetricFamily(
            "tts_cache_hits_per_cpu_second", "Synthesis cache hits per CPU-second of this process since start."
        )
        family.add_metric([], hits / cpu if cpu > 0 else 0.0)
        yield family


_cache_hits_per_cpu_collector = _CacheHitsPerCpuCollector()
REGISTRY.register(_cache_hits_per_cpu_collector)


def _engine_queue_depth() -> int:
    return engine_admission.in_flight


# Engine work admitted and not finished in this process (tts/synthesis/engine_time/admission.py counts it).
ENGINE_QUEUE_DEPTH = Gauge("tts_engine_queue_depth", "Syntheses admitted to this process's engine, queued or running.")
ENGINE_QUEUE_DEPTH.set_function(_engine_queue_depth)


class _ModelsCollector(Collector):
    """Model versions loaded in this process, read from the engine registry at scrape time."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "tts_models_loaded",
            "Model versions loaded in this process (1 = warmed).",
            labels=["model_version", "engine"],
        )
        registry = get_registry()
        for spec in registry.loaded_specs():
            family.add_metric([str(spec.id), spec.engine], 1.0 if registry.is_warm(spec) else 0.0)
        yield family


_models_collector = _ModelsCollector()
REGISTRY.register(_models_collector)


class _EngineTasksCollector(Collector):
    """Engine tasks run and dropped unrun (their stream's client went away), in the engine
    scheduler (a segment, or a step of one) and in the engines' pools (a window, an encoder run)."""

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "tts_engine_tasks",
            "Engine tasks run, and dropped before they started because nobody waited for them any more.",
            labels=["queue", "outcome"],
        )
        family.add_metric(["scheduler", "run"], engine_scheduler.tasks_run)
        family.add_metric(["scheduler", "dropped"], engine_scheduler.tasks_dropped)
        family.add_metric(["pool", "run"], task_counts.run)
        family.add_metric(["pool", "dropped"], task_counts.dropped)
        yield family


_engine_tasks_collector = _EngineTasksCollector()
REGISTRY.register(_engine_tasks_collector)


# --- hooks ------------------------------------------------------------------


def synthesis_finished(record: SynthesisRecord, text: str) -> None:
    """Called once the history record holds its final state; never raises."""
    try:
        source = record.source or "unknown"
        SYNTHESES.labels(source, record.status).inc()
        CACHE_REQUESTS.labels("hit" if record.cache_hit else "miss").inc()
        if record.latency_ms is not None:
            SYNTHESIS_LATENCY.labels(source).observe(record.latency_ms / 1000)
        if record.ttfb_ms is not None:
            SYNTHESIS_TTFB.labels(source).observe(record.ttfb_ms / 1000)
        CHARACTERS.labels(source).inc(record.characters)
        AUDIO_SECONDS.labels(source).inc(max(0.0, record.duration_s))
        logger.info(
            "synthesis %s %s: %s chars, %.2fs audio, %sms",
            record.pk,
            record.status,
            record.characters,
            record.duration_s,
            record.latency_ms,
            extra={
                "history_item_id": str(record.pk),
                "tenant_id": record.tenant_id,
                "voice_id": record.voice_id,
                "model_version_id": record.model_version_id,
                "source": source,
                "status": record.status,
                "error_code": record.error_code,
                "characters": record.characters,
                "audio_seconds": record.duration_s,
                "latency_ms": record.latency_ms,
                "ttfb_ms": record.ttfb_ms,
                "cache_hit": record.cache_hit,
                "text": loggable_text(text),
            },
        )
    except Exception:
        logger.exception("could not record metrics for a synthesis")
