"""What one second of audio costs each engine, in engine-seconds: the unit of the engine-time budget.

An engine's cost factor is the engine-seconds (one CPU thread, ``TTS_ENGINE_THREADS=1``) it spends
per second of audio it makes, measured on the reference machine (docs/benchmarks.md, "Engine time
per second of audio"). Kokoro-82M is about ten times Piper; the PyTorch VITS engine on CPU about
Piper's. ``TTS_ENGINE_COST_FACTORS`` (``kokoro-onnx=0.9,piper-onnx=0.08``) overrides any of them for
a deployment's own hardware (docs/operations.md); an engine named in neither costs the highest
known factor, so a new engine is never admitted as cheaper than the dearest one measured.

Used up front (``synthesis_prepare`` turns its low audio estimate into engine-seconds and refuses a
request over its plan's budget) and as the audio comes (``engine_budget``: every second made is
charged at the engine's factor and the run stops at the budget). The #36 fair-engine-time work
shares these two functions; keep their names and signatures.
"""

from __future__ import annotations

from django.conf import settings

#: Measured with ``bench/bench_engine_cost.py`` on the 2-core reference machine (docs/benchmarks.md).
DEFAULT_ENGINE_COST_FACTORS: dict[str, float] = {
    "piper-onnx": 0.08,
    "vits-torch": 0.12,
    "kokoro-onnx": 0.75,
}


def engine_cost_factors() -> dict[str, float]:
    """Every known engine's factor: the defaults, with ``TTS_ENGINE_COST_FACTORS`` over them."""
    return {**DEFAULT_ENGINE_COST_FACTORS, **getattr(settings, "TTS_ENGINE_COST_FACTORS", {})}


def engine_cost_factor(engine: str) -> float:
    """Engine-seconds per second of audio for ``engine`` ("piper-onnx", "kokoro-onnx", "vits-torch")."""
    factors = engine_cost_factors()
    factor = factors.get(engine)
    return float(factor) if factor is not None else max(factors.values())


def estimate_engine_seconds(engine: str, audio_seconds: float) -> float:
    """The engine-seconds ``engine`` spends making ``audio_seconds`` of audio."""
    return max(0.0, audio_seconds) * engine_cost_factor(engine)
