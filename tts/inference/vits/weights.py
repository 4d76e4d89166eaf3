"""Reads a Piper voice's generator weights and shapes, from its ``.onnx`` or a Piper ``.ckpt``.

Neither file states the hyperparameters (the ``.onnx.json`` does not either),
so they come from tensor shapes, and what shapes cannot tell (dilations,
upsampling strides) from the ONNX Conv attributes or the checkpoint's
``hyper_parameters``. Piper's exporter leaves a few traps in the ONNX file,
each handled where it is read:

- the flows' weight-normed convolutions are constant-folded into anonymous
  ``onnx::Conv_*`` initializers: they are named after the Conv node that
  consumes them (``/flow/flows.6/enc/in_layers.0/Conv`` ->
  ``flow.flows.6.enc.in_layers.0.weight``);
- in single-speaker files the spare input name ``sid`` lands on the first
  parameter, the phoneme embedding: it is named after its ``Gather``;
- ``dp.flows.0.logs`` is folded into ``exp(-logs)`` or ``-logs``.
"""

from __future__ import annotations

import ast
import pathlib
import pickle
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from .generator import VitsGenerator
from .hparams import VitsHyperParams

STATE_DICT_PREFIXES = ("enc_p.", "dp.", "flow.", "dec.", "emb_g.")
# Piper's two decoder presets; used only when a checkpoint names no dilations.
DEFAULT_DILATIONS = {
    "1": ((1, 3, 5), (1, 3, 5), (1, 3, 5)),
    "2": ((1, 2), (2, 6), (3, 12)),
}


class VoiceFormatError(ValueError):
    """The file is not a Piper VITS voice this loader understands."""


@dataclass(frozen=True)
class ConvGeometry:
    dilation: int
    stride: int


@dataclass
class VoiceWeights:
    hparams: VitsHyperParams
    state_dict: dict[str, torch.Tensor]


def load_voice_weights(path: str | pathlib.Path) -> VoiceWeights:
    """Weights and hyperparameters from a Piper ``.onnx`` export or a ``.ckpt`` training checkpoint."""
    if str(path).endswith(".ckpt"):
        return read_checkpoint(path)
    return read_onnx(path)


def build_generator(weights: VoiceWeights) -> VitsGenerator:
    """A ``VitsGenerator`` in eval mode with every inference weight loaded (training-only ones ignored)."""
    model = VitsGenerator(weights.hparams)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(weights.state_dict))
    if missing:
        raise VoiceFormatError(f"voice file lacks {len(missing)} generator weights, e.g. {missing[:5]}")
    wrong = [k for k in expected if tuple(expected[k].shape) != tuple(weights.state_dict[k].shape)]
    if wrong:
        raise VoiceFormatError(f"unexpected weight shapes for {wrong[:5]}")
    model.load_state_dict({k: weights.state_dict[k] for k in expected})
    return model.eval()


def read_onnx(path: str | pathlib.Path) -> VoiceWeights:
    try:
        graph = onnx.load(str(path)).graph
    except Exception as exc:  # onnx raises DecodeError, OSError, ...
        raise VoiceFormatError(f"cannot read ONNX file {path}: {exc}") from exc
    arrays = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    state = {name: array for name, array in arrays.items() if name.startswith(STATE_DICT_PREFIXES)}
    geometry: dict[str, ConvGeometry] = {}

    for node in graph.node:
        module = _module_name(node.name)
        if node.op_type in ("Conv", "ConvTranspose") and module:
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            geometry[module] = ConvGeometry(
                dilation=int(attrs.get("dilations", [1])[0]), stride=int(attrs.get("strides", [1])[0])
            )
            for position, suffix in ((1, "weight"), (2, "bias")):
                _adopt(state, arrays, node.input, position, f"{module}.{suffix}")
        elif node.op_type == "Gather" and module in ("enc_p.emb", "emb_g"):
            _adopt(state, arrays, node.input, 0, f"{module}.weight")

    if "dp.flows.0.logs" not in state:
        state["dp.flows.0.logs"] = _unfold_affine_logs(graph.node, arrays)
    tensors = {name: torch.from_numpy(np.array(array, dtype=np.float32)) for name, array in state.items()}
    tensors = fold_weight_norm(tensors)
    return VoiceWeights(infer_hyperparams(tensors, geometry, {}), tensors)


def read_checkpoint(path: str | pathlib.Path) -> VoiceWeights:
    try:
        # weights_only refuses arbitrary objects (a checkpoint is a pickle);
        # Lightning stores dataset paths in hyper_parameters, so allow those.
        with torch.serialization.safe_globals([pathlib.PosixPath, pathlib.WindowsPath]):
            checkpoint = torch.load(str(path), map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, OSError, EOFError) as exc:
        raise VoiceFormatError(f"cannot read checkpoint {path}: {exc}") from exc
    if not isinstance(checkpoint, dict):
        raise VoiceFormatError(f"{path} is not a Piper checkpoint")
    state = checkpoint.get("state_dict", checkpoint)
    generator = {k.removeprefix("model_g."): v for k, v in state.items() if k.startswith("model_g.")} or dict(state)
    tensors = fold_weight_norm({k: v.float() for k, v in generator.items() if isinstance(v, torch.Tensor)})
    hints = checkpoint.get("hyper_parameters") or {}
    return VoiceWeights(infer_hyperparams(tensors, {}, hints), tensors)


def fold_weight_norm(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Replace ``weight_g``/``weight_v`` pairs (training checkpoints) by the plain weight.

    Both spellings: ``torch.nn.utils.weight_norm``'s and the parametrization's
    (``parametrizations.weight.original0``/``original1``).
    """
    state = {
        key.replace(".parametrizations.weight.original0", ".weight_g").replace(
            ".parametrizations.weight.original1", ".weight_v"
        ): value
        for key, value in state.items()
    }
    folded = {k: v for k, v in state.items() if not k.endswith((".weight_g", ".weight_v"))}
    for key in state:
        if key.endswith(".weight_v"):
            base = key.removesuffix(".weight_v")
            v, g = state[key], state[f"{base}.weight_g"]
            # torch.nn.utils.weight_norm's default dim=0: one norm per output slice.
            norm = v.pow(2).sum(dim=tuple(range(1, v.dim())), keepdim=True).sqrt()
            folded[f"{base}.weight"] = g * v / norm
    return folded


def infer_hyperparams(
    state: Mapping[str, torch.Tensor], geometry: Mapping[str, ConvGeometry], hints: Mapping[str, Any]
) -> VitsHyperParams:
    """Hyperparameters from weight shapes, Conv attributes (ONNX) and checkpoint hints."""
    try:
        return _infer_hyperparams(state, geometry, hints)
    except (KeyError, IndexError, ValueError) as exc:
        raise VoiceFormatError(f"not a Piper VITS generator: cannot read {exc}") from exc


def _infer_hyperparams(
    state: Mapping[str, torch.Tensor], geometry: Mapping[str, ConvGeometry], hints: Mapping[str, Any]
) -> VitsHyperParams:
    def shape(name: str) -> tuple[int, ...]:
        return tuple(state[name].shape)

    n_vocab, hidden = shape("enc_p.emb.weight")
    _, rel_positions, k_channels = shape("enc_p.encoder.attn_layers.0.emb_rel_k")
    filter_channels, _, kernel_size = shape("enc_p.encoder.ffn_layers.0.conv_1.weight")
    if "dp.flows.0.m" not in state:
        raise VoiceFormatError("only voices with the stochastic duration predictor (Piper's default) are supported")
    dp_flows = _indices(state, "dp.flows.", ".pre.weight")
    spline_flow = f"dp.flows.{dp_flows[-1]}"  # flow 1 exists only in checkpoints
    flows = _indices(state, "flow.flows.", ".pre.weight")
    flow_layers = _indices(state, "flow.flows.0.enc.in_layers.", ".weight")
    ups = _indices(state, "dec.ups.", ".weight")
    resblock = "1" if "dec.resblocks.0.convs1.0.weight" in state else "2"
    num_kernels = len(
        _indices(state, "dec.resblocks.", ".convs1.0.weight" if resblock == "1" else ".convs.0.weight")
    ) // len(ups)
    conv_list = "convs1" if resblock == "1" else "convs"
    kernel_sizes = tuple(shape(f"dec.resblocks.{j}.{conv_list}.0.weight")[2] for j in range(num_kernels))
    n_speakers, gin_channels = shape("emb_g.weight") if "emb_g.weight" in state else (1, 0)

    rates = _hint_tuple(hints, "upsample_rates")
    upsample_kernels = tuple(shape(f"dec.ups.{i}.weight")[2] for i in ups)
    upsample_rates = tuple(
        geometry[f"dec.ups.{i}"].stride
        if f"dec.ups.{i}" in geometry
        else rates[i]
        if rates
        else upsample_kernels[i] // 2
        for i in ups
    )

    dilations = _resblock_dilations(state, geometry, hints, resblock, conv_list, num_kernels)
    flow_dilation = geometry.get(
        "flow.flows.0.enc.in_layers.1", ConvGeometry(int(hints.get("flow_dilation_rate", 1)), 1)
    ).dilation

    return VitsHyperParams(
        n_vocab=n_vocab,
        inter_channels=shape("enc_p.proj.weight")[0] // 2,
        hidden_channels=hidden,
        filter_channels=filter_channels,
        n_heads=hidden // k_channels,
        n_layers=len(_indices(state, "enc_p.encoder.attn_layers.", ".conv_q.weight")),
        kernel_size=kernel_size,
        window_size=(rel_positions - 1) // 2,
        dp_filter_channels=shape("dp.pre.weight")[0],
        dp_kernel_size=shape("dp.convs.convs_sep.0.weight")[2],
        dp_n_layers=len(_indices(state, "dp.convs.convs_sep.", ".weight")),
        dp_n_flows=(dp_flows[-1] + 1) // 2,
        dp_flow_n_layers=len(_indices(state, f"{spline_flow}.convs.convs_sep.", ".weight")),
        dp_num_bins=(shape(f"{spline_flow}.proj.weight")[0] + 1) // 3,
        flow_n_flows=len(flows),
        flow_hidden_channels=shape("flow.flows.0.pre.weight")[0],
        flow_kernel_size=shape("flow.flows.0.enc.in_layers.0.weight")[2],
        flow_dilation_rate=flow_dilation,
        flow_n_layers=len(flow_layers),
        resblock=resblock,
        resblock_kernel_sizes=kernel_sizes,
        resblock_dilation_sizes=dilations,
        upsample_rates=upsample_rates,
        upsample_initial_channel=shape("dec.conv_pre.weight")[0],
        upsample_kernel_sizes=upsample_kernels,
        n_speakers=n_speakers,
        gin_channels=gin_channels,
    )


def _resblock_dilations(
    state: Mapping[str, torch.Tensor],
    geometry: Mapping[str, ConvGeometry],
    hints: Mapping[str, Any],
    resblock: str,
    conv_list: str,
    num_kernels: int,
) -> tuple[tuple[int, ...], ...]:
    """Dilations exist only as Conv attributes (ONNX) or in the checkpoint's hyperparameters."""
    counts = [len(_indices(state, f"dec.resblocks.{j}.{conv_list}.", ".weight")) for j in range(num_kernels)]
    names = [[f"dec.resblocks.{j}.{conv_list}.{i}" for i in range(count)] for j, count in enumerate(counts)]
    if all(name in geometry for row in names for name in row):
        return tuple(tuple(geometry[name].dilation for name in row) for row in names)
    hinted = hints.get("resblock_dilation_sizes")
    if isinstance(hinted, str):
        hinted = ast.literal_eval(hinted)
    candidate = tuple(tuple(int(d) for d in row) for row in hinted) if hinted else DEFAULT_DILATIONS[resblock]
    if [len(row) for row in candidate] != counts:
        raise VoiceFormatError(f"resblock dilations {candidate} do not fit the decoder's convolutions {counts}")
    return candidate


def _hint_tuple(hints: Mapping[str, Any], key: str) -> tuple[int, ...] | None:
    value = hints.get(key)
    if isinstance(value, str):
        value = ast.literal_eval(value)
    return tuple(int(v) for v in value) if value else None


def _indices(state: Mapping[str, object], prefix: str, suffix: str) -> list[int]:
    pattern = re.compile(re.escape(prefix) + r"(\d+)" + re.escape(suffix) + "$")
    found = sorted({int(m.group(1)) for key in state if (m := pattern.match(key))})
    if not found:
        raise KeyError(f"{prefix}N{suffix}")
    return found


def _module_name(node_name: str) -> str:
    """``/flow/flows.6/enc/in_layers.0/Conv`` -> ``flow.flows.6.enc.in_layers.0``."""
    parts = node_name.strip("/").split("/")[:-1]
    return ".".join(parts) if parts and parts[0] + "." in STATE_DICT_PREFIXES else ""


def _adopt(
    state: dict[str, np.ndarray], arrays: Mapping[str, np.ndarray], inputs: Sequence[str], position: int, name: str
) -> None:
    """Name an initializer after the node that consumes it, unless it already carries a state-dict name."""
    if position < len(inputs) and inputs[position] in arrays and not inputs[position].startswith(STATE_DICT_PREFIXES):
        state.setdefault(name, arrays[inputs[position]])


def _unfold_affine_logs(nodes: Sequence[Any], arrays: Mapping[str, np.ndarray]) -> np.ndarray:
    """Recover ``dp.flows.0.logs`` from the reverse pass ``(x - m) * exp(-logs)``.

    Exporters fold either ``exp(-logs)`` (a constant fed to Mul) or ``-logs``
    (a constant fed to Exp), depending on how far constant folding went.
    """
    for node in nodes:
        if not node.name.startswith("/dp/flows.0/"):
            continue
        constants = [arrays[i] for i in node.input if i in arrays and i != "dp.flows.0.m"]
        if node.op_type == "Exp" and constants:
            return -constants[0]
        if node.op_type == "Mul" and constants and constants[0].shape == arrays["dp.flows.0.m"].shape:
            return -np.log(constants[0])
    raise VoiceFormatError("cannot find dp.flows.0.logs (folded or not) in the ONNX graph")
