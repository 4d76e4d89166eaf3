"""The residual coupling flows, reverse direction: prior sample -> decoder input."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .hparams import VitsHyperParams


class WN(nn.Module):
    """WaveNet-style gated dilated convolutions of the coupling layers."""

    def __init__(self, hidden: int, kernel_size: int, dilation_rate: int, n_layers: int, gin_channels: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.n_layers = n_layers
        self.in_layers = nn.ModuleList()
        self.res_skip_layers = nn.ModuleList()
        for i in range(n_layers):
            dilation = dilation_rate**i
            padding = (kernel_size * dilation - dilation) // 2
            self.in_layers.append(nn.Conv1d(hidden, 2 * hidden, kernel_size, dilation=dilation, padding=padding))
            # The last layer only feeds the skip sum.
            self.res_skip_layers.append(nn.Conv1d(hidden, 2 * hidden if i < n_layers - 1 else hidden, 1))
        if gin_channels:
            self.cond_layer = nn.Conv1d(gin_channels, 2 * hidden * n_layers, 1)

    def forward(self, x: Tensor, x_mask: Tensor, g: Tensor | None) -> Tensor:
        output = torch.zeros_like(x)
        cond = self.cond_layer(g) if g is not None else None
        for i, (in_layer, res_skip) in enumerate(zip(self.in_layers, self.res_skip_layers, strict=True)):
            x_in = in_layer(x)
            if cond is not None:
                x_in = x_in + cond[:, i * 2 * self.hidden : (i + 1) * 2 * self.hidden]
            acts = torch.tanh(x_in[:, : self.hidden]) * torch.sigmoid(x_in[:, self.hidden :])
            res_skip_acts = res_skip(acts)
            if i < self.n_layers - 1:
                x = (x + res_skip_acts[:, : self.hidden]) * x_mask
                output = output + res_skip_acts[:, self.hidden :]
            else:
                output = output + res_skip_acts
        return output * x_mask


class ResidualCouplingLayer(nn.Module):
    """Mean-only affine coupling, reverse direction."""

    def __init__(self, hp: VitsHyperParams) -> None:
        super().__init__()
        self.half_channels = hp.inter_channels // 2
        self.pre = nn.Conv1d(self.half_channels, hp.flow_hidden_channels, 1)
        self.enc = WN(
            hp.flow_hidden_channels, hp.flow_kernel_size, hp.flow_dilation_rate, hp.flow_n_layers, hp.gin_channels
        )
        self.post = nn.Conv1d(hp.flow_hidden_channels, self.half_channels, 1)

    def forward(self, x: Tensor, x_mask: Tensor, g: Tensor | None) -> Tensor:
        x0, x1 = x[:, : self.half_channels], x[:, self.half_channels :]
        h = self.enc(self.pre(x0) * x_mask, x_mask, g)
        m = self.post(h) * x_mask
        return torch.cat([x0, (x1 - m) * x_mask], 1)


class ResidualCouplingBlock(nn.Module):
    """Flows keyed by Piper's list indices (0, 2, 4, ...); the Flips between have no weights."""

    def __init__(self, hp: VitsHyperParams) -> None:
        super().__init__()
        self.order = [2 * i for i in range(hp.flow_n_flows)][::-1]
        self.flows = nn.ModuleDict({str(i): ResidualCouplingLayer(hp) for i in sorted(self.order)})

    def forward(self, z: Tensor, y_mask: Tensor, g: Tensor | None) -> Tensor:
        for index in self.order:
            z = self.flows[str(index)](torch.flip(z, [1]), y_mask, g)
        return z


def flow_receptive_field(hp: VitsHyperParams) -> int:
    """How many frames on each side can change one output frame of the reverse flows."""
    per_flow = sum((hp.flow_kernel_size - 1) // 2 * hp.flow_dilation_rate**i for i in range(hp.flow_n_layers))
    return per_flow * hp.flow_n_flows
