"""ONNX Runtime engine for Piper voices: the CPU default (CUDA provider if present).

Seeded noise: a Piper export draws its noise inside the graph with
``RandomNormalLike`` nodes (the duration predictor's noise and the prior's),
from a generator ONNX Runtime keeps per session, so no run can be repeated.
At load each such node is replaced by a slice of a new float input
(``noise_0``, ``noise_1``, ...) reshaped like the node's input, and the engine
feeds those inputs from NumPy generators: seeded ones (``SynthesisParams.seed``)
for reproducible audio, fresh ones otherwise. The prior's noise is sized from
the phoneme count; a run that needs more is retried with a larger draw, which
starts with the same values (NumPy fills arrays in sequence).

The same edit marks the phoneme durations (the duration predictor's ``Ceil``)
as an output when the export lacks it (``piper.patch_voice_with_alignment``):
same weights, same audio, and every voice reports where its phonemes are
(timestamps, and the cuts of request stitching).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper

from .engine import EngineError, EngineOutput, ModelSpec, SynthesisParams, derive_seed
from .piper_frontend import PiperFrontend, read_piper_config

logger = logging.getLogger(__name__)

#: Noise values drawn per phoneme id for each noise input, first try (frames x channels fit in most runs).
NOISE_PER_ID = 8 * 192


def seedable_graph(model_path: str) -> tuple[bytes, int]:
    """The model with every ``RandomNormalLike`` fed from an input ``noise_<k>``; and how many.

    ``Y = RandomNormalLike(X)`` becomes ``Y = Reshape(Slice(noise_k, [0], [Size(X)]), Shape(X))``.
    """
    model = onnx.load(model_path)
    if len(model.graph.output) == 1:
        try:
            from piper.patch_voice_with_alignment import add_alignment_output

            add_alignment_output(model)
        except (ImportError, ValueError) as exc:  # not a Piper/VITS export: no durations then
            logger.info("no alignment output for %s: %s", model_path, exc)
    graph = model.graph
    nodes = []
    count = 0
    zero = helper.make_tensor("noise_slice_start", TensorProto.INT64, [1], [0])
    axes = helper.make_tensor("noise_slice_axes", TensorProto.INT64, [1], [0])
    graph.initializer.extend([zero, axes])
    for node in graph.node:
        if node.op_type != "RandomNormalLike":
            nodes.append(node)
            continue
        k = count
        count += 1
        source, target = node.input[0], node.output[0]
        graph.input.append(helper.make_tensor_value_info(f"noise_{k}", TensorProto.FLOAT, [f"noise_{k}_len"]))
        nodes += [
            helper.make_node("Shape", [source], [f"noise_{k}_shape"]),
            helper.make_node("Size", [source], [f"noise_{k}_size"]),
            helper.make_node("Reshape", [f"noise_{k}_size", "noise_slice_start_shape"], [f"noise_{k}_end"]),
            helper.make_node(
                "Slice", [f"noise_{k}", "noise_slice_start", f"noise_{k}_end", "noise_slice_axes"], [f"noise_{k}_flat"]
            ),
            helper.make_node("Reshape", [f"noise_{k}_flat", f"noise_{k}_shape"], [target]),
        ]
    if count:
        graph.initializer.append(helper.make_tensor("noise_slice_start_shape", TensorProto.INT64, [1], [1]))
    del graph.node[:]
    graph.node.extend(nodes)
    return model.SerializeToString(), count


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
            graph, self._noise_inputs = seedable_graph(spec.model_path)
            self.session = onnxruntime.InferenceSession(graph, sess_options=options, providers=providers)
        except Exception as exc:  # onnxruntime (and onnx) raise their own exception types
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
                (cfg.noise_scale if params.noise_scale is None else params.noise_scale) * params.variation,
                cfg.length_scale if params.length_scale is None else params.length_scale,
                (cfg.noise_w_scale if params.noise_w is None else params.noise_w) * params.variation,
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
        scale = float(scales[1]) if scales[1] > 0 else 1.0
        per_input = max(4096, int(len(phoneme_ids) * NOISE_PER_ID * max(1.0, scale)))
        try:
            with self._slots:
                for attempt in range(3):
                    feed.update(self._noise(params.seed, per_input << (2 * attempt)))
                    try:
                        result = self.session.run(None, feed)
                        break
                    except Exception:
                        if attempt == 2:
                            raise  # not a noise input too short after all
        except Exception as exc:
            raise EngineError(f"ONNX inference failed: {exc}", retryable=True) from exc
        audio = np.clip(np.asarray(result[0], dtype=np.float32).reshape(-1), -1.0, 1.0)
        samples = None
        if self._has_alignment and len(result) > 1:
            samples = (np.asarray(result[1]).reshape(-1) * self.hop_length).astype(np.int64)
        return EngineOutput(audio, self.sample_rate, samples)

    def _noise(self, seed: int | None, size: int) -> dict[str, np.ndarray]:
        """One array per noise input: seeded per input when ``seed`` is given, fresh otherwise."""
        feed = {}
        for k in range(self._noise_inputs):
            rng = np.random.default_rng(None if seed is None else derive_seed(seed, "noise", k))
            feed[f"noise_{k}"] = rng.standard_normal(size, dtype=np.float32)
        return feed

    def close(self) -> None:
        self.session = None  # type: ignore[assignment]
