"""Splitting Kokoro-82M's served graph in two: the predictor and the decoder (iSTFTNet vocoder).

The served graph (``kokoro_model``: the package's int8 graph with its ``durations`` output) is
cut with ``onnx.utils.Extractor`` at the decoder's inputs, found by their producers, not by
node names alone:

- ``asr``: the aligned text features, ``MatMul(text_encoder, alignment)``, ``[1, 512, frames]``;
- ``f0`` and ``n``: the predicted pitch and energy curves, ``[1, 2 * frames]``;
- ``ref``: the decoder's half of the style vector (``style[:, :128]``), ``[1, 128]``;
- ``phase``: the harmonic source's phase (the ``CumSum`` of the sine generator,
  ``[1, 2 * frames, 9]``). Cumulative over the whole sentence, it is computed in the first part so
  that a window of the decoder would start at the phase the whole decode has there.

**predictor**: ``tokens, style, speed -> asr, f0, n, ref, phase, durations``;
**decoder**: ``asr, f0, n, ref, phase -> audio``. The two hold the graph's weights once between
them (29 + 63 MB for the 92 MB graph), and decoding a whole sentence through them gives the
served graph's audio to the last bit (``check_split``).

What the split does *not* give is windowed decoding that equals the whole decode: Kokoro's decoder
normalizes over the whole time axis (AdaIN: an instance norm, mean and variance over every frame,
about 54 of them in its residual blocks: 108 ReduceMean nodes) and quantizes its activations per tensor (int8
``DynamicQuantizeLinear``, scale from the whole tensor's range), so every output sample depends on
the whole sentence. Measured (``bench/bench_kokoro_windows.py``, docs/benchmarks.md): the same decode
with the last 5 of ~200 frames left off differs in the kept audio at 10-11 dB SNR. The engine therefore
still decodes sentences whole (docs/architecture.md, "Kokoro").

No Django here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .onnx_split import file_sha256, save_atomic

PARTS = ("predictor", "decoder")
#: Part inputs of the decoder, in the order ``SplitNames`` lists them.
DECODER_INPUTS = ("asr", "f0", "n", "ref", "phase")
_SINE_CUMSUM = "l_sin_gen/CumSum"


class KokoroSplitError(Exception):
    """The graph is not a Kokoro graph this split knows, or a part does not match its hash."""


@dataclass(frozen=True)
class KokoroSplitNames:
    """Tensor names at the cut: the predictor's outputs that are the decoder's inputs."""

    asr: str
    f0: str
    n: str
    ref: str
    phase: str
    durations: str

    def decoder_inputs(self) -> list[str]:
        return [getattr(self, field) for field in DECODER_INPUTS]


@dataclass(frozen=True)
class KokoroParts:
    """The two part files of one served graph, their SHA-256 and the names at the cut.

    Stored as a model version's ``options["kokoro_split"]`` (``to_options``/``from_options``); used only
    after ``verify`` finds every part and the source unchanged.
    """

    source_sha256: str
    paths: dict[str, str]
    sha256: dict[str, str]
    names: KokoroSplitNames

    def to_options(self) -> dict[str, object]:
        return {
            "source_sha256": self.source_sha256,
            "paths": dict(self.paths),
            "sha256": dict(self.sha256),
            "names": asdict(self.names),
        }

    @classmethod
    def from_options(cls, raw: dict[str, Any]) -> KokoroParts:
        names = KokoroSplitNames(**{k: str(v) for k, v in dict(raw["names"]).items()})
        paths = {part: str(raw["paths"][part]) for part in PARTS}
        sha256 = {part: str(raw["sha256"][part]) for part in PARTS}
        return cls(str(raw["source_sha256"]), paths, sha256, names)

    def verify(self) -> str:
        """``""`` when every part is there with its recorded SHA-256, else what is wrong."""
        for part in PARTS:
            path = Path(self.paths[part])
            if not path.is_file():
                return f"the {part} part {path.name} is missing"
            if file_sha256(path) != self.sha256[part]:
                return f"the {part} part {path.name} does not match its SHA-256"
        return ""


def find_cut(model: Any) -> KokoroSplitNames:
    """The decoder's input tensors in a Kokoro graph; ``KokoroSplitError`` when the graph has another shape."""
    graph = model.graph
    nodes = list(graph.node)
    producer = {out: node for node in nodes for out in node.output}
    outputs = {o.name for o in graph.output}
    if not {"audio", "durations"} <= outputs or {i.name for i in graph.input} != {"tokens", "style", "speed"}:
        raise KokoroSplitError("not a served Kokoro graph (inputs tokens, style, speed; outputs audio, durations)")

    def one(kind: str, found: list[str]) -> str:
        if len(found) != 1:
            raise KokoroSplitError(f"expected one {kind} in the graph, found {len(found)}")
        return found[0]

    # The aligned features: the only MatMul whose second operand is the (cast) alignment matrix
    # built from the durations' CumSum, feeding the decoder.
    asr = one(
        "aligned-features MatMul",
        [
            n.output[0]
            for n in nodes
            if n.op_type == "MatMul" and n.name.startswith("/encoder/") and "text_encoder" in n.input[0]
        ],
    )
    # F0 and N: the predictor's projections, reshaped to [1, 2 * frames].
    curves = {}
    for kind in ("F0_proj", "N_proj"):
        curves[kind] = one(
            f"{kind} curve",
            [
                n.output[0]
                for n in nodes
                if n.op_type == "Reshape"
                and _fed_by(producer, n.input[0], f"/encoder/{kind}/", depth=3)
                and n.name.startswith("/encoder/")
            ],
        )
    # The decoder's half of the style: a Slice (or the Split ONNX Runtime fused it into) of ``style``.
    ref = one(
        "decoder style slice",
        [
            n.output[0]
            for n in nodes
            if n.op_type in ("Slice", "Split") and "style" in n.input and n.name.startswith("/decoder/")
        ],
    )
    phase = one(
        "sine-generator CumSum", [n.output[0] for n in nodes if n.op_type == "CumSum" and _SINE_CUMSUM in n.name]
    )
    return KokoroSplitNames(asr, curves["F0_proj"], curves["N_proj"], ref, phase, "durations")


def _fed_by(producer: dict[str, Any], tensor: str, prefix: str, *, depth: int) -> bool:
    """Whether ``tensor`` comes, within ``depth`` nodes, from a node named ``prefix...``."""
    frontier = [tensor]
    for _ in range(depth):
        nxt = []
        for name in frontier:
            node = producer.get(name)
            if node is None:
                continue
            if node.name.startswith(prefix):
                return True
            nxt.extend(node.input)
        frontier = nxt
    return False


def split_kokoro(model_path: str | Path, dest_dir: str | Path) -> KokoroParts:
    """Write the predictor and decoder parts of the served graph at ``model_path`` into ``dest_dir``
    (named by its SHA-256; reused when already there and matching), checked by ``check_split``."""
    import onnx
    import onnx.utils

    source = Path(model_path)
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    source_sha = file_sha256(source)
    try:
        model = onnx.load(str(source))
    except Exception as exc:  # protobuf's DecodeError and the like
        raise KokoroSplitError(f"{source.name} is not an ONNX model") from exc
    names = find_cut(model)
    extractor = onnx.utils.Extractor(model)
    graphs = {
        "predictor": extractor.extract_model(["tokens", "style", "speed"], [*names.decoder_inputs(), names.durations]),
        "decoder": extractor.extract_model(names.decoder_inputs(), ["audio"]),
    }
    del model, extractor
    paths: dict[str, str] = {}
    sha256: dict[str, str] = {}
    for part, graph in graphs.items():
        path = dest / f"kokoro-{source_sha}.{part}.onnx"
        save_atomic(graph, path)
        paths[part], sha256[part] = str(path), file_sha256(path)
    parts = KokoroParts(source_sha, paths, sha256, names)
    check_split(source, parts)
    return parts


def _session(path: str | Path) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def run_parts(
    predictor: Any, decoder: Any, names: KokoroSplitNames, feed: dict[str, np.ndarray]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A whole sentence through the two parts: its audio and the predictor's outputs."""
    outputs = dict(zip([o.name for o in predictor.get_outputs()], predictor.run(None, feed), strict=True))
    audio = decoder.run(None, {name: outputs[name] for name in names.decoder_inputs()})[0]
    return np.asarray(audio, dtype=np.float32).reshape(-1), outputs


def check_split(source: str | Path, parts: KokoroParts) -> None:
    """The parts match their hashes and give the source graph's audio and durations on a short input."""
    problem = parts.verify()
    if problem:
        raise KokoroSplitError(problem)
    style = np.linspace(-0.2, 0.2, 256, dtype=np.float32).reshape(1, 256)
    feed: dict[str, np.ndarray] = {
        "tokens": np.array([[0, 53, 57, 56, 51, 0]], dtype=np.int64),  # "koni"
        "style": style,
        "speed": np.array([1.0], dtype=np.float32),
    }
    whole = _session(source).run(None, feed)
    audio, outputs = run_parts(_session(parts.paths["predictor"]), _session(parts.paths["decoder"]), parts.names, feed)
    if not np.array_equal(np.asarray(whole[1]).reshape(-1), np.asarray(outputs[parts.names.durations]).reshape(-1)):
        raise KokoroSplitError("the predictor part's durations differ from the graph's")
    if not np.allclose(np.asarray(whole[0]).reshape(-1), audio, atol=1e-5):
        raise KokoroSplitError("the two parts' audio differs from the graph's")
