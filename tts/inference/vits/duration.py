"""The stochastic duration predictor, reverse direction only: noise -> log durations.

Spline flows conditioned on the text encoder's hidden states; the forward
(training) direction and its posterior flows are not implemented.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from .hparams import VitsHyperParams
from .text_encoder import LayerNorm

# Constants of VITS's rational-quadratic spline flows; not stored in the weights.
SPLINE_TAIL_BOUND = 5.0
SPLINE_MIN_BIN_WIDTH = 1e-3
SPLINE_MIN_BIN_HEIGHT = 1e-3
SPLINE_MIN_DERIVATIVE = 1e-3


class DDSConv(nn.Module):
    """Dilated depth-separable convolutions (dilation kernel_size**i)."""

    def __init__(self, channels: int, kernel_size: int, n_layers: int) -> None:
        super().__init__()
        self.convs_sep = nn.ModuleList()
        self.convs_1x1 = nn.ModuleList()
        self.norms_1 = nn.ModuleList()
        self.norms_2 = nn.ModuleList()
        for i in range(n_layers):
            dilation = kernel_size**i
            padding = (kernel_size * dilation - dilation) // 2
            self.convs_sep.append(
                nn.Conv1d(channels, channels, kernel_size, groups=channels, dilation=dilation, padding=padding)
            )
            self.convs_1x1.append(nn.Conv1d(channels, channels, 1))
            self.norms_1.append(LayerNorm(channels))
            self.norms_2.append(LayerNorm(channels))

    def forward(self, x: Tensor, x_mask: Tensor, g: Tensor | None = None) -> Tensor:
        if g is not None:
            x = x + g
        layers = zip(self.convs_sep, self.convs_1x1, self.norms_1, self.norms_2, strict=True)
        for sep, conv_1x1, norm_1, norm_2 in layers:
            y = F.gelu(norm_1(sep(x * x_mask)))
            y = F.gelu(norm_2(conv_1x1(y)))
            x = x + y
        return x * x_mask


def rational_quadratic_inverse(
    inputs: Tensor, widths_raw: Tensor, heights_raw: Tensor, derivatives_raw: Tensor
) -> Tensor:
    """Inverse of VITS's piecewise rational-quadratic spline with linear tails.

    Computed for every element and selected with ``where`` (not boolean
    indexing as in training) so shapes stay static: no host sync on GPU.
    """
    bound = SPLINE_TAIL_BOUND
    num_bins = widths_raw.shape[-1]
    inside = (inputs >= -bound) & (inputs <= bound)
    x = inputs.clamp(-bound, bound)

    # Linear tails: the outer derivatives are pinned so the spline meets slope 1.
    edge = torch.full_like(derivatives_raw[..., :1], math.log(math.exp(1 - SPLINE_MIN_DERIVATIVE) - 1))
    derivatives = SPLINE_MIN_DERIVATIVE + F.softplus(torch.cat([edge, derivatives_raw, edge], dim=-1))

    def knots(raw: Tensor, min_size: float) -> Tensor:
        sizes = min_size + (1 - min_size * num_bins) * F.softmax(raw, dim=-1)
        inner = 2 * bound * torch.cumsum(sizes, dim=-1)[..., :-1] - bound
        return torch.cat([torch.full_like(raw[..., :1], -bound), inner, torch.full_like(raw[..., :1], bound)], dim=-1)

    cumwidths = knots(widths_raw, SPLINE_MIN_BIN_WIDTH)
    cumheights = knots(heights_raw, SPLINE_MIN_BIN_HEIGHT)
    widths = cumwidths[..., 1:] - cumwidths[..., :-1]
    heights = cumheights[..., 1:] - cumheights[..., :-1]
    delta = heights / widths

    search = torch.cat([cumheights[..., :-1], cumheights[..., -1:] + 1e-6], dim=-1)
    bin_idx = (torch.sum(x.unsqueeze(-1) >= search, dim=-1) - 1).unsqueeze(-1)

    def pick(values: Tensor) -> Tensor:
        return values.gather(-1, bin_idx).squeeze(-1)

    in_cumwidths, in_widths = pick(cumwidths), pick(widths)
    in_cumheights, in_heights = pick(cumheights), pick(heights)
    in_delta = pick(delta)
    in_deriv, in_deriv_next = pick(derivatives), pick(derivatives[..., 1:])

    offset = x - in_cumheights
    slope_sum = in_deriv + in_deriv_next - 2 * in_delta
    a = offset * slope_sum + in_heights * (in_delta - in_deriv)
    b = in_heights * in_deriv - offset * slope_sum
    c = -in_delta * offset
    root = (2 * c) / (-b - torch.sqrt(b.pow(2) - 4 * a * c))
    return torch.where(inside, root * in_widths + in_cumwidths, inputs)


class ConvFlow(nn.Module):
    def __init__(self, filter_channels: int, kernel_size: int, n_layers: int, num_bins: int) -> None:
        super().__init__()
        self.filter_channels = filter_channels
        self.num_bins = num_bins
        self.pre = nn.Conv1d(1, filter_channels, 1)
        self.convs = DDSConv(filter_channels, kernel_size, n_layers)
        self.proj = nn.Conv1d(filter_channels, num_bins * 3 - 1, 1)

    def forward(self, x: Tensor, x_mask: Tensor, g: Tensor) -> Tensor:
        x0, x1 = x[:, :1], x[:, 1:]
        h = self.proj(self.convs(self.pre(x0), x_mask, g=g)) * x_mask
        b, _, t = x0.shape
        h = h.reshape(b, 1, -1, t).permute(0, 1, 3, 2)  # [b, 1, t, 3*bins-1]
        scale = math.sqrt(self.filter_channels)
        x1 = rational_quadratic_inverse(
            x1,
            h[..., : self.num_bins] / scale,
            h[..., self.num_bins : 2 * self.num_bins] / scale,
            h[..., 2 * self.num_bins :],
        )
        return torch.cat([x0, x1], 1) * x_mask


class ElementwiseAffine(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.m = nn.Parameter(torch.zeros(channels, 1))
        self.logs = nn.Parameter(torch.zeros(channels, 1))

    def forward(self, x: Tensor, x_mask: Tensor) -> Tensor:
        return (x - self.m) * torch.exp(-self.logs) * x_mask


class StochasticDurationPredictor(nn.Module):
    """Reverse direction only: noise -> log durations.

    ``flows`` is a dict keyed by Piper's list indices so parameter names match:
    0 is the affine flow, odd indices are spline flows, and the Flips at the
    even indices have no weights and become ``torch.flip`` calls. Flow 1 is
    left out because Piper's reverse pass drops it (exported ONNX files do not
    have it).
    """

    def __init__(self, hp: VitsHyperParams) -> None:
        super().__init__()
        c = hp.dp_filter_channels
        self.pre = nn.Conv1d(hp.hidden_channels, c, 1)
        self.proj = nn.Conv1d(c, c, 1)
        self.convs = DDSConv(c, hp.dp_kernel_size, hp.dp_n_layers)
        self.conv_flow_indices = [2 * i + 1 for i in range(hp.dp_n_flows)][:0:-1]  # e.g. 7, 5, 3
        flows: dict[str, nn.Module] = {"0": ElementwiseAffine(2)}
        for index in self.conv_flow_indices:
            flows[str(index)] = ConvFlow(c, hp.dp_kernel_size, hp.dp_flow_n_layers, hp.dp_num_bins)
        self.flows = nn.ModuleDict(flows)
        if hp.gin_channels:
            self.cond = nn.Conv1d(hp.gin_channels, c, 1)

    def forward(self, x: Tensor, x_mask: Tensor, g: Tensor | None, noise: Tensor) -> Tensor:
        """``noise``: ``[b, 2, t]`` already scaled by noise_w. Returns log durations ``[b, 1, t]``."""
        x = self.pre(x)
        if g is not None:
            x = x + self.cond(g)
        x = self.proj(self.convs(x, x_mask)) * x_mask
        z = noise
        for index in self.conv_flow_indices:
            z = self.flows[str(index)](torch.flip(z, [1]), x_mask, g=x)
        z = self.flows["0"](torch.flip(z, [1]), x_mask)
        return z[:, :1]
