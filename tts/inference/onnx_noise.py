"""Seeded noise for Piper ONNX graphs: ``RandomNormalLike`` nodes fed from inputs.

A Piper export draws its noise inside the graph with ``RandomNormalLike``
nodes (the duration predictor's noise and the prior's sampling), from a
generator ONNX Runtime keeps per session, so no run can be repeated.
``seedable_graph`` replaces each such node by a slice of a new float input
(``noise_0``, ``noise_1``, ...) reshaped like the node's input, and
``noise_feed`` fills those inputs from NumPy generators: seeded ones
(``SynthesisParams.seed`` through ``derive_seed``) for reproducible audio,
fresh ones otherwise.

Each input's generator is keyed by the replaced node's output tensor name,
not by its position, so the whole graph and the encoder part cut from it
(``onnx_split``; the flow and decoder parts hold no such node) draw the same
noise for the same seed, and windowed decoding gives the whole decode's audio.

The prior's noise is sized from the phoneme count before the run (its frame
count is only known inside it): ``run_with_noise`` retries a run whose draw
was too short with a larger one, which starts with the same values (NumPy
fills arrays in sequence), so the audio does not depend on the attempt.

Applied in memory when a session is created: the files on disk (the
operator's model, the hash-checked parts) are never changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .engine import derive_seed

logger = logging.getLogger(__name__)

#: Noise values drawn per phoneme id for each noise input, first try (frames x channels fit in most runs).
NOISE_PER_ID = 8 * 192
#: Tries per run, each drawing four times as much noise as the one before.
ATTEMPTS = 3

ResultT = TypeVar("ResultT")


@dataclass(frozen=True)
class SeedableGraph:
    """A serialized graph whose noise comes from inputs; ``keys[k]`` seeds input ``noise_<k>``."""

    model: bytes
    keys: tuple[str, ...]


def seedable_graph(model: Any, *, add_durations: bool = False) -> SeedableGraph:
    """``model`` (an ``onnx.ModelProto``, edited in place) with every ``RandomNormalLike`` fed from an input.

    ``Y = RandomNormalLike(X)`` becomes ``Y = Reshape(Slice(noise_k, [0], [Size(X)]), Shape(X))``.

    ``add_durations``: also mark the duration predictor's ``Ceil`` as an output
    when the graph has only its audio output
    (``piper.patch_voice_with_alignment``; same weights, same audio).
    """
    from onnx import TensorProto, helper

    if add_durations and len(model.graph.output) == 1:
        try:
            from piper.patch_voice_with_alignment import add_alignment_output

            add_alignment_output(model)
        except (ImportError, ValueError) as exc:  # not a Piper/VITS export: no durations then
            logger.info("no alignment output for %s: %s", model.graph.name, exc)
    graph = model.graph
    nodes = []
    keys: list[str] = []
    for node in graph.node:
        if node.op_type != "RandomNormalLike":
            nodes.append(node)
            continue
        k = len(keys)
        keys.append(node.output[0])
        source, target = node.input[0], node.output[0]
        graph.input.append(helper.make_tensor_value_info(f"noise_{k}", TensorProto.FLOAT, [f"noise_{k}_len"]))
        nodes += [
            helper.make_node("Shape", [source], [f"noise_{k}_shape"]),
            helper.make_node("Size", [source], [f"noise_{k}_size"]),
            helper.make_node("Reshape", [f"noise_{k}_size", "noise_slice_one"], [f"noise_{k}_end"]),
            helper.make_node(
                "Slice", [f"noise_{k}", "noise_slice_start", f"noise_{k}_end", "noise_slice_axes"], [f"noise_{k}_flat"]
            ),
            helper.make_node("Reshape", [f"noise_{k}_flat", f"noise_{k}_shape"], [target]),
        ]
    if keys:
        graph.initializer.extend(
            [
                helper.make_tensor("noise_slice_start", TensorProto.INT64, [1], [0]),
                helper.make_tensor("noise_slice_axes", TensorProto.INT64, [1], [0]),
                helper.make_tensor("noise_slice_one", TensorProto.INT64, [1], [1]),
            ]
        )
        del graph.node[:]
        graph.node.extend(nodes)
    return SeedableGraph(model.SerializeToString(), tuple(keys))


def noise_size(phoneme_count: int, length_scale: float) -> int:
    """Values to draw per noise input on the first try for ``phoneme_count`` ids at ``length_scale``."""
    scale = length_scale if length_scale > 0 else 1.0
    return max(4096, int(phoneme_count * NOISE_PER_ID * max(1.0, scale)))


def noise_feed(keys: Sequence[str], seed: int | None, size: int) -> dict[str, np.ndarray]:
    """One array per noise input: from a generator seeded per input when ``seed`` is given, fresh otherwise."""
    feed = {}
    for k, key in enumerate(keys):
        rng = np.random.default_rng(None if seed is None else derive_seed(seed, "noise", key))
        feed[f"noise_{k}"] = rng.standard_normal(size, dtype=np.float32)
    return feed


def run_with_noise(
    run: Callable[[dict[str, np.ndarray]], ResultT],
    feed: dict[str, np.ndarray],
    keys: Sequence[str],
    seed: int | None,
    size: int,
) -> ResultT:
    """``run(feed + noise)``, retried with four times the noise while a draw may have been too short.

    Without noise inputs, one plain run. Seeded or not, every try of one call
    draws from generators started afresh, so a retry only extends the draw.
    For an unseeded call that means one fresh seed for all its tries.
    """
    if not keys:
        return run(feed)
    if seed is None:
        seed = int(np.random.default_rng().integers(0, 2**63 - 1))
    for attempt in range(ATTEMPTS):
        try:
            return run({**feed, **noise_feed(keys, seed, size << (2 * attempt))})
        except Exception:  # onnxruntime raises its own types; a short draw fails the Reshape
            if attempt == ATTEMPTS - 1:
                raise  # not a noise input too short after all
    raise AssertionError("unreachable")
