"""ONNX Runtime engine for Piper voices: the CPU default (CUDA provider if present)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence

import numpy as np
import onnxruntime

from .engine import EngineError, EngineOutput, ModelSpec, SynthesisParams
from .piper_frontend import PiperFrontend, read_piper_config

logger = logging.getLogger(__name__)


class PiperOnnxEngine:
    """One ``InferenceSession`` per loaded model version, with bounded threads."""

    name = "piper-onnx"

    def __init__(self, spec: ModelSpec, *, threads: int = 1) -> None:
        try:
            self.config = read_piper_config(spec.config_path)
        except (OSError, ValueError, KeyError) as exc:
            raise EngineError(f"cannot read voice config {spec.config_path}: {exc}") from exc
        self.frontend = PiperFrontend(self.config)
        self.sample_rate = int(self.config.sample_rate)
        self.num_speakers = int(self.config.num_speakers)
        self.hop_length = int(self.config.hop_length)
        self.default_length_scale = float(self.config.length_scale)

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        providers = ["CPUExecutionProvider"]
        if spec.device in ("auto", "cuda") and "CUDAExecutionProvider" in onnxruntime.get_available_providers():
            providers.insert(0, "CUDAExecutionProvider")
        try:
            self.session = onnxruntime.InferenceSession(spec.model_path, sess_options=options, providers=providers)
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EngineError(f"cannot load ONNX model {spec.model_path}: {exc}") from exc
        self._input_names = {i.name for i in self.session.get_inputs()}
        self._has_alignment = len(self.session.get_outputs()) > 1
        # ONNX Runtime sessions are thread-safe: run as many at once as the
        # cores allow at this thread count (2 cores, 1 thread: 2 concurrent
        # syntheses), so concurrent streams share the CPU instead of queueing
        # behind one lock, without oversubscribing it.
        self.concurrency = max(1, (os.cpu_count() or 1) // max(1, threads))
        self._slots = threading.BoundedSemaphore(self.concurrency)

    def phonemize(self, text: str) -> list[list[str]]:
        return self.frontend.phonemize(text)

    def phonemes_to_ids(self, phonemes: Sequence[str]) -> list[int]:
        return self.frontend.phonemes_to_ids(phonemes)

    def synthesize_ids(self, phoneme_ids: Sequence[int], params: SynthesisParams) -> EngineOutput:
        if not phoneme_ids:
            return EngineOutput(np.zeros(0, dtype=np.float32), self.sample_rate)
        cfg = self.config
        scales = np.array(
            [
                cfg.noise_scale if params.noise_scale is None else params.noise_scale,
                cfg.length_scale if params.length_scale is None else params.length_scale,
                cfg.noise_w_scale if params.noise_w is None else params.noise_w,
            ],
            dtype=np.float32,
        )
        feed: dict[str, np.ndarray] = {
            "input": np.asarray([phoneme_ids], dtype=np.int64),
            "input_lengths": np.asarray([len(phoneme_ids)], dtype=np.int64),
            "scales": scales,
        }
        if "sid" in self._input_names:
            sid = cfg.default_speaker_id if params.speaker_id is None else params.speaker_id
            if not 0 <= sid < max(1, self.num_speakers):
                raise EngineError(f"speaker {sid} out of range 0..{self.num_speakers - 1}")
            feed["sid"] = np.asarray([sid], dtype=np.int64)
        try:
            with self._slots:
                result = self.session.run(None, feed)
        except Exception as exc:
            raise EngineError(f"ONNX inference failed: {exc}", retryable=True) from exc
        audio = np.clip(np.asarray(result[0], dtype=np.float32).reshape(-1), -1.0, 1.0)
        samples = None
        if self._has_alignment and len(result) > 1:
            samples = (np.asarray(result[1]).reshape(-1) * self.hop_length).astype(np.int64)
        return EngineOutput(audio, self.sample_rate, samples)

    def close(self) -> None:
        self.session = None  # type: ignore[assignment]
