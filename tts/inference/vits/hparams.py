"""Shapes of one Piper VITS voice: what the network is built from.

Read from the weights themselves (``weights.py``): neither Piper's ``.onnx``
nor its ``.onnx.json`` states them, and medium, high and x_low voices differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class VitsHyperParams:
    """Shapes of one voice; read from its weights (see ``vits_weights``)."""

    n_vocab: int
    inter_channels: int
    hidden_channels: int
    filter_channels: int
    n_heads: int
    n_layers: int
    kernel_size: int
    window_size: int
    dp_filter_channels: int
    dp_kernel_size: int
    dp_n_layers: int
    dp_n_flows: int
    dp_flow_n_layers: int
    dp_num_bins: int
    flow_n_flows: int
    flow_hidden_channels: int
    flow_kernel_size: int
    flow_dilation_rate: int
    flow_n_layers: int
    resblock: str
    resblock_kernel_sizes: tuple[int, ...]
    resblock_dilation_sizes: tuple[tuple[int, ...], ...]
    upsample_rates: tuple[int, ...]
    upsample_initial_channel: int
    upsample_kernel_sizes: tuple[int, ...]
    n_speakers: int = 1
    gin_channels: int = 0

    @property
    def hop_length(self) -> int:
        return math.prod(self.upsample_rates)
