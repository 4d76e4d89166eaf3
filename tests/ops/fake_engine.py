"""A stand-in engine for lifecycle tests: loads instantly, speaks a short tone,
and can hold its warm-up at a gate so a test sees the not-yet-ready state."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from tts.inference.engine import EngineOutput, ModelSpec, SynthesisParams


class FakeEngine:
    sample_rate = 22050
    num_speakers = 1
    hop_length = 256
    default_length_scale = 1.0
    # Tests clear it to hold synthesis (and so warm-up) until they set it.
    gate = threading.Event()
    loads: list[int] = []

    def __init__(self, spec: ModelSpec, *, threads: int = 1) -> None:
        if not spec.model_path.endswith(".onnx"):
            raise ValueError(f"not a model file: {spec.model_path}")
        self.spec = spec
        FakeEngine.loads.append(spec.id)

    def phonemize(self, text: str) -> list[list[str]]:
        return [list("hello")]

    def phonemes_to_ids(self, phonemes: Sequence[str]) -> list[int]:
        return [1] * len(phonemes)

    def synthesize_ids(self, phoneme_ids: Sequence[int], params: SynthesisParams) -> EngineOutput:
        if not FakeEngine.gate.wait(timeout=30):
            raise TimeoutError("fake engine gate never opened")
        t = np.arange(self.sample_rate // 10) / self.sample_rate
        return EngineOutput(audio=(0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), sample_rate=self.sample_rate)

    def close(self) -> None:
        pass


FakeEngine.gate.set()
