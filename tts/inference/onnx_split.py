"""Splitting a Piper (VITS) ONNX graph into three parts, so it can be decoded in windows.

A Piper export is one graph: text encoder and duration predictor, then the
reverse flows, then the HiFi-GAN decoder. Cut at the flows' input and at the
decoder's input (``onnx.utils.Extractor``), it becomes:

- **encoder**: the graph's inputs -> the sampled prior ``z_p`` and its mask
  (plus the speaker embedding of a multi-speaker voice, and the phoneme
  durations when the graph has that output); run once per sentence; all the
  graph's noise is drawn here (a graph whose flow or decoder draws any is
  not split: windows could not repeat the whole decode);
- **flow**: ``z_p`` and the mask -> the decoder's input ``z``;
- **decoder**: ``z`` -> audio.

Flows and decoder are convolutions over time, so a window of frames widened
by their receptive fields computes the same audio for its core as the whole
sentence does. Those receptive fields are measured on the parts themselves
(``measure_overlaps``: perturb one frame, see how far the output changes), so
nothing here depends on a voice's hyperparameters.

No Django here; ``tts.catalogue.windowed_model`` stores the parts beside the
model version.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

PARTS = ("encoder", "flow", "decoder")
# Operators that draw random numbers: allowed in the encoder part only.
_RANDOM_OPS = frozenset(
    {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli"}
)
# Frames of random latent the receptive fields are measured on (a few seconds of speech).
PROBE_FRAMES = 192


class GraphSplitError(Exception):
    """The graph cannot be split (not a Piper/VITS export); the message says why."""


@dataclass(frozen=True)
class SplitNames:
    """Tensor names at the cuts, so the engine can feed one part's outputs to the next."""

    flow_inputs: list[str]  # z_p, mask (and g): the encoder's outputs, the flow's inputs
    decoder_inputs: list[str]  # z (and g): the flow's outputs, the decoder's inputs
    durations: str  # the encoder's durations output, "" when the graph has none
    latent: str  # z_p, cut in windows
    mask: str  # the frames mask, cut in windows
    z: str  # the decoder's latent input, cut in windows


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _between(model: Any, start_prefix: str, output: str) -> list[Any]:
    """Nodes on a path from a node named ``start_prefix...`` to the graph output ``output``."""
    nodes = list(model.graph.node)
    producer = {name: node for node in nodes for name in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    forward: set[int] = set()
    stack = [node for node in nodes if node.name.startswith(start_prefix)]
    if not stack:
        raise GraphSplitError(f"no {start_prefix}* nodes: not a Piper/VITS export")
    while stack:
        node = stack.pop()
        if id(node) not in forward:
            forward.add(id(node))
            for name in node.output:
                stack.extend(consumers.get(name, []))
    backward: set[int] = set()
    stack = [producer[output]]
    while stack:
        node = stack.pop()
        if id(node) not in backward:
            backward.add(id(node))
            stack.extend(producer[name] for name in node.input if name in producer)
    return [node for node in nodes if id(node) in forward and id(node) in backward]


def _cut(model: Any, part: list[Any]) -> list[str]:
    """The tensors ``part`` reads from outside itself (weights and constants excluded)."""
    initializers = {init.name for init in model.graph.initializer}
    constants = {name for node in model.graph.node if node.op_type == "Constant" for name in node.output}
    produced = {name for node in part for name in node.output}
    cut: list[str] = []
    for node in part:
        for name in node.input:
            if name and name not in initializers and name not in produced and name not in constants and name not in cut:
                cut.append(name)
    return cut


def split_graph(model: Any) -> tuple[dict[str, Any], SplitNames]:
    """The three parts of ``model`` (an ``onnx.ModelProto``) and the names at the cuts."""
    from onnx import TensorProto, helper
    from onnx.utils import Extractor

    graph_outputs = [out.name for out in model.graph.output]
    audio = graph_outputs[0]
    durations = graph_outputs[1] if len(graph_outputs) > 1 else ""
    decoder_inputs = _cut(model, _between(model, "/dec/", audio))
    # z is the decoder input the flows make; anything else it reads (a speaker's g) comes from the encoder.
    from_flow = {name for node in _between(model, "/flow/", audio) for name in node.output}
    z_candidates = [name for name in decoder_inputs if name in from_flow]
    if len(z_candidates) != 1:
        raise GraphSplitError(f"unexpected cut: decoder inputs {decoder_inputs}")
    flow_inputs = _cut(model, _between(model, "/flow/", z_candidates[0]))
    latent_candidates = [name for name in flow_inputs if name not in decoder_inputs]
    if len(latent_candidates) != 2:
        raise GraphSplitError(f"unexpected cut: flow inputs {flow_inputs}, decoder inputs {decoder_inputs}")
    extractor = Extractor(model)
    # Shape inference cannot always type a cut tensor (some exports): every cut is float.
    for name in [*flow_inputs, *decoder_inputs, *z_candidates, durations]:
        if name and name not in extractor.value_infos:
            extractor.value_infos[name] = helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
    inputs = [inp.name for inp in model.graph.input]
    try:
        parts = {
            "encoder": extractor.extract_model(inputs, flow_inputs + ([durations] if durations else [])),
            "flow": extractor.extract_model(flow_inputs, z_candidates),
            "decoder": extractor.extract_model(decoder_inputs, [audio]),
        }
    except Exception as exc:  # onnx raises its own types
        raise GraphSplitError(f"cannot extract the parts: {exc}") from exc
    # Windows repeat the whole decode only if the noise is drawn once per sentence, in the encoder
    # (``onnx_noise`` feeds it from the request's seed there).
    for part in ("flow", "decoder"):
        if any(node.op_type in _RANDOM_OPS for node in parts[part].graph.node):
            raise GraphSplitError(f"the {part} part draws random numbers: it cannot be decoded in windows")
    # Which of the two is the mask ([batch, 1, frames]) is told when the encoder first runs
    # (``measure_overlaps``); until then, the one a Cast makes (VITS' float sequence mask).
    producer = {name: node.op_type for node in model.graph.node for name in node.output}
    latent_candidates.sort(key=lambda name: producer.get(name) == "Cast")
    latent, mask = latent_candidates
    return parts, SplitNames(flow_inputs, decoder_inputs, durations, latent, mask, z_candidates[0])


@dataclass(frozen=True)
class WindowedParts:
    """Where the parts of one model live, their hashes, and what windows need to know.

    Stored as ``ModelVersion.options["windowed"]`` (``as_options``) and read
    back by the engine (``from_options``), which checks the hashes before use.
    """

    paths: dict[str, str]
    sha256: dict[str, str]
    names: SplitNames
    hop_length: int
    flow_overlap: int
    decoder_overlap: int

    def as_options(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> WindowedParts:
        return cls(
            paths=dict(options["paths"]),
            sha256=dict(options["sha256"]),
            names=SplitNames(**options["names"]),
            hop_length=int(options["hop_length"]),
            flow_overlap=int(options["flow_overlap"]),
            decoder_overlap=int(options["decoder_overlap"]),
        )

    def verify(self) -> str:
        """ "" when every part is there with its hash, else what is wrong."""
        for part in PARTS:
            path = self.paths.get(part, "")
            if not path or not os.path.isfile(path):
                return f"{part} part {path!r} is missing"
            if file_sha256(path) != self.sha256.get(part):
                return f"{part} part {path} does not match its sha256"
        return ""


def _session(path: str) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])


def _reach(differs: np.ndarray, centre: int, per_frame: int) -> int:
    """How many frames either side of ``centre`` a change there reached.

    ``differs``: along the output's time axis, whether each position changed
    (``per_frame`` positions per latent frame).
    """
    changed = np.nonzero(differs)[0]
    if len(changed) == 0:
        raise GraphSplitError("a changed frame changed nothing: cannot measure the receptive field")
    left = centre * per_frame - int(changed.min())
    right = int(changed.max()) + 1 - (centre + 1) * per_frame
    return max(0, math.ceil(max(left, right) / per_frame))


def measure_overlaps(
    paths: dict[str, str], names: SplitNames, probe_ids: list[int]
) -> tuple[SplitNames, int, int, int]:
    """(names, hop length, flow overlap, decoder overlap) measured on the parts.

    ``names`` comes back with latent and mask told apart by their shapes.

    The encoder runs once on ``probe_ids`` (for the speaker embedding of a
    multi-speaker voice and the latent's channel count); the flow then runs on
    a random latent of ``PROBE_FRAMES`` frames, and again with its middle frame
    changed: how far the change reaches in the output is the receptive field.
    The same for the decoder on the flow's output.
    """
    encoder, flow, decoder = (_session(paths[part]) for part in PARTS)
    feed: dict[str, np.ndarray] = {
        "input": np.asarray([probe_ids], dtype=np.int64),
        "input_lengths": np.asarray([len(probe_ids)], dtype=np.int64),
        "scales": np.asarray([0.0, 1.0, 0.0], dtype=np.float32),
    }
    if "sid" in {inp.name for inp in encoder.get_inputs()}:
        feed["sid"] = np.zeros(1, dtype=np.int64)
    outputs = dict(zip([out.name for out in encoder.get_outputs()], encoder.run(None, feed), strict=True))
    if outputs[names.latent].shape[1] == 1 and outputs[names.mask].shape[1] != 1:
        names = replace(names, latent=names.mask, mask=names.latent)
    channels = outputs[names.latent].shape[1]
    rng = np.random.default_rng(0)
    frames, centre = PROBE_FRAMES, PROBE_FRAMES // 2
    outputs[names.latent] = rng.standard_normal((1, channels, frames)).astype(np.float32)
    outputs[names.mask] = np.ones((1, 1, frames), dtype=np.float32)
    flow_feed = {name: outputs[name] for name in names.flow_inputs}
    z = flow.run(None, flow_feed)[0]
    changed = {**flow_feed, names.latent: flow_feed[names.latent].copy()}
    changed[names.latent][:, :, centre] += 1.0
    flow_overlap = _reach((z[0] != flow.run(None, changed)[0][0]).any(axis=0), centre, 1)
    decoder_feed = {name: (z if name == names.z else outputs[name]) for name in names.decoder_inputs}
    audio = decoder.run(None, decoder_feed)[0].reshape(-1)
    hop = len(audio) // frames
    if hop * frames != len(audio):
        raise GraphSplitError(f"the decoder gives {len(audio)} samples for {frames} frames: not a whole hop")
    z_changed = z.copy()
    z_changed[:, :, centre] += 1.0
    changed_audio = decoder.run(None, {**decoder_feed, names.z: z_changed})[0].reshape(-1)
    decoder_overlap = _reach(audio != changed_audio, centre, hop)
    if 2 * (flow_overlap + decoder_overlap) >= frames:
        raise GraphSplitError(f"receptive fields too wide to measure on {frames} frames")
    return names, hop, flow_overlap, decoder_overlap


def save_atomic(model: Any, dest: Path) -> None:
    """Write an ONNX ``model`` to ``dest`` under a temporary name, then rename: never half a file."""
    import onnx

    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    try:
        onnx.save(model, tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)  # a concurrent import never reads half a file
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_parts(source: str | Path, dest_dir: str | Path, stem: str, probe_ids: list[int]) -> WindowedParts:
    """Split ``source`` into ``dest_dir/<stem>.{encoder,flow,decoder}.onnx`` and measure the overlaps.

    Existing part files are reused (their names carry the source's hash).
    """
    try:
        import onnx
    except ImportError as exc:
        raise GraphSplitError(f"the onnx package is needed to split the graph: {exc}") from exc
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        model = onnx.load(str(source))
    except Exception as exc:
        raise GraphSplitError(f"cannot read {source}: {exc}") from exc
    parts, names = split_graph(model)
    paths = {part: str(dest / f"{stem}.{part}.onnx") for part in PARTS}
    for part, path in paths.items():
        if not os.path.isfile(path):
            save_atomic(parts[part], Path(path))
    try:
        names, hop, flow_overlap, decoder_overlap = measure_overlaps(paths, names, probe_ids)
    except GraphSplitError:
        raise
    except Exception as exc:  # onnxruntime's own types
        raise GraphSplitError(f"the parts do not run: {exc}") from exc
    return WindowedParts(
        paths=paths,
        sha256={part: file_sha256(path) for part, path in paths.items()},
        names=names,
        hop_length=hop,
        flow_overlap=flow_overlap,
        decoder_overlap=decoder_overlap,
    )
