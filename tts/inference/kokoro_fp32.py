"""Kokoro's fp32 graph, built from the int8 graph the packages ship: nothing fetched.

The served graph (``kokoro_model``) is dynamically quantized: every ``MatMul`` and ``Conv`` is a
``DynamicQuantizeLinear`` of its input, a ``MatMulInteger``/``ConvInteger`` on int8 weights, a
``Cast`` and a ``Mul`` by the two scales (the bias, for a ``Conv``, quantized with them); the
LSTMs are ``DynamicQuantizeLSTM`` and the embeddings a ``Gather`` of int8 rows and a
``DequantizeLinear``. Each of those chains becomes its float operator on the dequantized
weights (``(w - zero_point) * scale``): the same weights the int8 graph computes with, without
the activations' rounding. What the chains computed before is left to ``_prune``.

OpenVINO compiles this graph to bf16 or f32 kernels (``kokoro_openvino``); on the int8 graph it
gains nothing (#42). The file is written once beside the served graph, named by its SHA-256, with
a ``.json`` that records both hashes; a copy whose hashes do not match is built again.

No Django here.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .onnx_split import file_sha256, save_atomic

logger = logging.getLogger(__name__)


class KokoroFp32Error(Exception):
    """The graph is not a quantized Kokoro graph this rewrite knows; the message says why."""


def fp32_paths(model_path: str | Path) -> tuple[Path, Path]:
    """Where the fp32 graph of the served graph at ``model_path`` and its record live."""
    source = Path(model_path)
    return source.with_suffix(".fp32.onnx"), source.with_suffix(".fp32.json")


@dataclass(frozen=True)
class Fp32Graph:
    path: Path
    #: The tensors where the sample-rate decoder begins (``decoder_cut``): computed in f32 before them,
    #: the convolutions after them may run in bf16.
    decoder_inputs: tuple[str, ...]


def fp32_graph(model_path: str | Path, style: np.ndarray) -> Fp32Graph:
    """The fp32 graph of the served graph at ``model_path``: reused when its record's hashes match
    both files, else built, checked and written (about 10 s and 330 MB, once)."""
    source = Path(model_path)
    dest, record_path = fp32_paths(source)
    source_sha = file_sha256(source)
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        if record["source_sha256"] == source_sha and dest.is_file() and file_sha256(dest) == record["sha256"]:
            return Fp32Graph(dest, tuple(str(name) for name in record["decoder_inputs"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    import onnx

    try:
        model = onnx.load(str(source))
    except Exception as exc:  # protobuf's DecodeError and the like
        raise KokoroFp32Error(f"{source.name} is not an ONNX model") from exc
    counts = dequantize(model)
    cut = decoder_cut(model)
    save_atomic(model, dest)
    del model
    check_fp32(source, dest, style)
    record = {"source_sha256": source_sha, "sha256": file_sha256(dest), "rewritten": counts, "decoder_inputs": cut}
    record_path.write_text(json.dumps(record), encoding="utf-8")
    logger.info("wrote Kokoro's fp32 graph %s (%s)", dest.name, counts)
    return Fp32Graph(dest, tuple(cut))


def decoder_cut(model: Any) -> list[str]:
    """The tensors that enter the decoder's convolutions from outside them, sorted.

    The convolutions are everything downstream of the aligned text features (``kokoro_split``'s
    ``asr``) or of the harmonic source's STFT features (the ``Concat`` of its magnitude and phase):
    the frame- and sample-rate residual blocks, upsamplers and the inverse STFT. Upstream of them
    stay the text encoder, the predictor, the style projections and the sine source, whose phase
    accumulates over the whole sentence: in bf16 that cumulative phase, and with it the speech, is
    lost (docs/benchmarks.md, "Kokoro runtimes (#42)").
    """
    from .kokoro_split import find_cut

    graph = model.graph
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    atans = [n for n in graph.node if n.op_type == "Atan"]
    if len(atans) != 1:
        raise KokoroFp32Error("no single Atan: not Kokoro's decoder")
    # The harmonic source's features: the first Concat downstream of the phase's Atan.
    features = ""
    frontier = [atans[0].output[0]]
    for _ in range(8):
        following = [n for name in frontier for n in consumers.get(name, [])]
        concat = [n for n in following if n.op_type == "Concat"]
        if concat:
            features = concat[0].output[0]
            break
        frontier = [out for n in following for out in n.output]
    if not features:
        raise KokoroFp32Error("the harmonic source's features are not concatenated after its phase")
    inside: set[int] = set()
    stack = [find_cut(model).asr, features]
    while stack:
        for node in consumers.get(stack.pop(), []):
            if id(node) not in inside:
                inside.add(id(node))
                stack.extend(node.output)
    made_inside = {out for node in graph.node if id(node) in inside for out in node.output}
    weights = {t.name for t in graph.initializer}
    return sorted(
        {
            name
            for node in graph.node
            if id(node) in inside
            for name in node.input
            if name and name not in made_inside and name not in weights
        }
    )


def dequantize(model: Any) -> dict[str, int]:
    """Rewrite ``model`` (an ``onnx.ModelProto``) in place to float operators; how many of each."""
    from onnx import numpy_helper

    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def array(name: str) -> np.ndarray:
        if name not in weights:
            raise KokoroFp32Error(f"{name} is not a constant weight")
        return numpy_helper.to_array(weights[name])

    def only(name: str, op: str) -> Any:
        found = consumers.get(name, [])
        if len(found) != 1 or found[0].op_type != op:
            raise KokoroFp32Error(f"{name} does not feed one {op}")
        return found[0]

    def weight_scale(scale_mul: Any) -> np.ndarray:
        """The weight's scale in ``Mul(input_scale, weight_scale)``."""
        product = producer.get(scale_mul.input[1])
        if product is None or product.op_type != "Mul":
            raise KokoroFp32Error(f"{scale_mul.name}: its scale is not a product of two scales")
        return array(product.input[1]).astype(np.float32)

    counts = {"MatMul": 0, "Conv": 0, "LSTM": 0, "Gather": 0}
    replaced: dict[int, Any] = {}  # node index -> its replacement
    index = {id(node): i for i, node in enumerate(graph.node)}
    new_weights: dict[str, Any] = {}  # a quantized weight some nodes share becomes one float weight
    dropped: set[int] = set()  # the chains' casts and scale products, which the float operator replaces

    def add_weight(name: str, value: np.ndarray) -> str:
        if name not in new_weights:
            new_weights[name] = numpy_helper.from_array(np.ascontiguousarray(value, dtype=np.float32), name)
        return name

    from onnx import helper

    for node in list(graph.node):
        if node.op_type in ("MatMulInteger", "ConvInteger"):
            quantize = producer.get(node.input[0])
            if quantize is None or quantize.op_type != "DynamicQuantizeLinear":
                raise KokoroFp32Error(f"{node.name}: its input is not dynamically quantized")
            biased = node.op_type == "ConvInteger" and _has_bias(node, consumers)
            after = only(node.output[0], "Add" if biased else "Cast")
            bias = None
            if after.op_type == "Add":
                bias = _bias(after, node, producer, array)
                dropped.add(index[id(after)])
                after = only(after.output[0], "Cast")
            scale_mul = only(after.output[0], "Mul")
            dropped.update((index[id(after)], index[id(scale_mul)]))
            zero = array(node.input[3]).astype(np.float32) if len(node.input) > 3 and node.input[3] else 0.0
            scale = weight_scale(scale_mul)
            quantized = array(node.input[1]).astype(np.float32)
            if node.op_type == "MatMulInteger":
                value = (quantized - zero) * scale  # per column: zero point and scale of shape [N] or []
                w = add_weight(f"{node.input[1]}_fp32", value)
                new = helper.make_node(
                    "MatMul", [quantize.input[0], w], [scale_mul.output[0]], name=f"{node.name}_fp32"
                )
                counts["MatMul"] += 1
            else:
                per_channel = (-1,) + (1,) * (quantized.ndim - 1)
                value = (quantized - np.reshape(zero, per_channel if np.ndim(zero) else ())) * np.reshape(
                    scale, per_channel if np.ndim(scale) else ()
                )
                inputs = [quantize.input[0], add_weight(f"{node.input[1]}_fp32", value)]
                if bias is not None:
                    inputs.append(add_weight(f"{node.name}_bias_fp32", bias))
                new = helper.make_node("Conv", inputs, [scale_mul.output[0]], name=f"{node.name}_fp32")
                new.attribute.extend(node.attribute)
                counts["Conv"] += 1
            replaced[index[id(node)]] = new
        elif node.op_type == "DynamicQuantizeLSTM":
            # W [dirs, input, 4 * hidden] and R [dirs, hidden, 4 * hidden], per direction scale and zero
            # point; ONNX's LSTM takes them transposed.
            def lstm_weight(values: str, scale: str, zero: str) -> np.ndarray:
                q = array(values).astype(np.float32)
                s = array(scale).astype(np.float32).reshape(-1, 1, 1)
                z = array(zero).astype(np.float32).reshape(-1, 1, 1)
                return np.transpose((q - z) * s, (0, 2, 1))

            w = add_weight(f"{node.input[1]}_fp32", lstm_weight(node.input[1], node.input[8], node.input[9]))
            r = add_weight(f"{node.input[2]}_fp32", lstm_weight(node.input[2], node.input[10], node.input[11]))
            inputs = [node.input[0], w, r, *node.input[3:8]]
            while inputs and not inputs[-1]:
                inputs.pop()
            new = helper.make_node("LSTM", inputs, list(node.output), name=f"{node.name}_fp32")
            new.attribute.extend(node.attribute)
            replaced[index[id(node)]] = new
            counts["LSTM"] += 1
        elif node.op_type == "DequantizeLinear" and node.input[0] in producer:
            gather = producer[node.input[0]]
            if gather.op_type != "Gather" or gather.input[0] not in weights:
                continue
            zero = array(node.input[2]).astype(np.float32) if len(node.input) > 2 and node.input[2] else 0.0
            table = (array(gather.input[0]).astype(np.float32) - zero) * array(node.input[1]).astype(np.float32)
            new = helper.make_node(
                "Gather",
                [add_weight(f"{gather.input[0]}_fp32", table), gather.input[1]],
                list(node.output),
                name=f"{gather.name}_fp32",
            )
            new.attribute.extend(gather.attribute)
            replaced[index[id(node)]] = new
            counts["Gather"] += 1
    if not counts["MatMul"] or not counts["Conv"]:
        raise KokoroFp32Error("no quantized MatMul or Conv: not the int8 Kokoro graph")
    nodes = [replaced.get(i, node) for i, node in enumerate(graph.node) if i not in dropped]
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(new_weights.values())
    _prune(graph)
    steady_phase(graph)
    return counts


#: Below this share of the real part (plus a floor for silent frames) the imaginary part counts as 0.
PHASE_RELATIVE = 1e-4
PHASE_FLOOR = 1e-6


def steady_phase(graph: Any) -> None:
    """Make the decoder's ``atan2`` the same on every runtime.

    The harmonic source's STFT phase is exported as ``atan(imag / real)`` with ``+pi`` where
    ``real < 0 and imag > 0``, ``-pi`` where ``real < 0`` otherwise. At the DC and Nyquist bins and
    in silent frames ``imag`` is 0 up to rounding, so its sign, and with it ``+pi`` or ``-pi``, is
    whatever a runtime's kernels round to (#42). Such an ``imag`` is set to 0 here and the test
    becomes ``imag >= 0``: ``+pi``, as ``torch.atan2`` gives for ``+0`` and the model was trained on;
    where ``real`` is 0 too, the phase is 0 (not ``0 / 0``).
    """
    from onnx import TensorProto, helper

    nodes = list(graph.node)
    producer = {out: node for node in nodes for out in node.output}
    atans = [n for n in nodes if n.op_type == "Atan"]
    if len(atans) != 1 or producer.get(atans[0].input[0]) is None:
        raise KokoroFp32Error(f"expected one Atan of the decoder's STFT, found {len(atans)}")
    div = producer[atans[0].input[0]]
    if div.op_type != "Div":
        raise KokoroFp32Error("the decoder's Atan does not take imag / real")
    imag, real = div.input[0], div.input[1]
    greater = [n for n in nodes if n.op_type == "Greater" and n.input[0] == imag]
    if len(greater) != 1:
        raise KokoroFp32Error("the decoder's phase has no test of the imaginary part's sign")

    def const(name: str, value: float) -> str:
        graph.initializer.append(helper.make_tensor(name, TensorProto.FLOAT, [], [value]))
        return name

    steady = "phase/imag_steady"
    added = [
        helper.make_node("Abs", [imag], ["phase/imag_abs"]),
        helper.make_node("Abs", [real], ["phase/real_abs"]),
        helper.make_node("Mul", ["phase/real_abs", const("phase/relative", PHASE_RELATIVE)], ["phase/scaled"]),
        helper.make_node("Add", ["phase/scaled", const("phase/floor", PHASE_FLOOR)], ["phase/threshold"]),
        helper.make_node("Less", ["phase/imag_abs", "phase/threshold"], ["phase/small"]),
        helper.make_node("Where", ["phase/small", const("phase/zero", 0.0), imag], [steady]),
        # 0 / 0 would be NaN (bf16 rounds silent frames to exact zeros): such a bin's phase is 0.
        helper.make_node("Equal", [real, "phase/zero"], ["phase/real_zero"]),
        helper.make_node("Where", ["phase/real_zero", const("phase/one", 1.0), real], ["phase/real_steady"]),
    ]
    div.input[0] = steady
    div.input[1] = "phase/real_steady"
    test = greater[0]
    test.op_type = "GreaterOrEqual"
    test.input[0] = steady
    position = nodes.index(div)
    for offset, node in enumerate(added):
        graph.node.insert(position + offset, node)


def _has_bias(node: Any, consumers: dict[str, list[Any]]) -> bool:
    found = consumers.get(node.output[0], [])
    return len(found) == 1 and found[0].op_type == "Add"


def _bias(add: Any, node: Any, producer: dict[str, Any], array: Any) -> np.ndarray:
    """The float bias behind ``Reshape(Cast(Floor(Div(bias, scales))))``, the ``Add``'s other input."""
    tensor = add.input[1] if add.input[0] == node.output[0] else add.input[0]
    for op in ("Reshape", "Cast", "Floor", "Div"):
        step = producer.get(tensor)
        if step is None or step.op_type != op:
            raise KokoroFp32Error(f"{add.name}: the bias is not a quantized constant")
        tensor = step.input[0]
    return np.asarray(array(tensor), dtype=np.float32)


def _prune(graph: Any) -> None:
    """Drop the nodes and weights no graph output needs any more."""
    needed = {o.name for o in graph.output}
    keep = []
    for node in reversed(list(graph.node)):
        if any(out in needed for out in node.output):
            keep.append(node)
            needed.update(i for i in node.input if i)
    keep.reverse()
    del graph.node[:]
    graph.node.extend(keep)
    weights = [t for t in graph.initializer if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(weights)


def check_fp32(source: str | Path, fp32: str | Path, style: np.ndarray) -> None:
    """The fp32 graph speaks as the int8 one does on a short input in a voice's ``style`` (1 x 256):
    durations that account for its audio, the same length within a frame a token, the same loudness
    within a factor of two."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    tokens = np.array([[0, 53, 57, 56, 51, 0]], dtype=np.int64)  # "koni"
    feed = {
        "tokens": tokens,
        "style": np.asarray(style, dtype=np.float32).reshape(1, 256),
        "speed": np.array([1.0], dtype=np.float32),
    }
    try:
        before = onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"]).run(None, feed)
        after = onnxruntime.InferenceSession(str(fp32), options, providers=["CPUExecutionProvider"]).run(None, feed)
    except Exception as exc:  # onnxruntime raises its own exception types
        raise KokoroFp32Error(f"the fp32 graph does not run: {exc}") from exc
    audio, durations = np.asarray(after[0]).reshape(-1), np.asarray(after[1]).reshape(-1)
    if int(durations.sum()) * 600 != len(audio):
        raise KokoroFp32Error("the fp32 graph's durations do not account for its audio")
    reference = np.asarray(before[0]).reshape(-1)
    if abs(len(reference) - len(audio)) > 600 * tokens.shape[1]:
        raise KokoroFp32Error(f"the fp32 graph's audio is {len(audio)} samples, the int8 graph's {len(reference)}")
    rms = [float(np.sqrt(np.mean(np.square(a)))) for a in (reference, audio)]
    if not 0.5 < rms[1] / max(rms[0], 1e-9) < 2.0:
        raise KokoroFp32Error(f"the fp32 graph's loudness {rms[1]:.4f} is not the int8 graph's {rms[0]:.4f}")
