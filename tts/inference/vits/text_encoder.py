"""The text encoder: phoneme ids -> hidden states and the prior's mean and log-scale.

Transformer layers with windowed relative-position self-attention, as in VITS.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from .hparams import VitsHyperParams


def sequence_mask(lengths: Tensor, max_length: int | Tensor) -> Tensor:
    """``[b, 1, t]`` float mask, 1 inside each item's length."""
    positions = torch.arange(max_length, device=lengths.device)  # type: ignore[arg-type]
    return (positions.unsqueeze(0) < lengths.unsqueeze(1)).unsqueeze(1).float()


class LayerNorm(nn.Module):
    """Layer norm over the channel axis of ``[b, c, t]``."""

    def __init__(self, channels: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.channels = channels
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x: Tensor) -> Tensor:
        x = F.layer_norm(x.transpose(1, -1), (self.channels,), self.gamma, self.beta, self.eps)
        return x.transpose(1, -1)


class RelativeSelfAttention(nn.Module):
    """Multi-head self-attention with windowed relative position embeddings."""

    def __init__(self, channels: int, n_heads: int, window_size: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.k_channels = channels // n_heads
        self.window_size = window_size
        self.conv_q = nn.Conv1d(channels, channels, 1)
        self.conv_k = nn.Conv1d(channels, channels, 1)
        self.conv_v = nn.Conv1d(channels, channels, 1)
        self.conv_o = nn.Conv1d(channels, channels, 1)
        # Piper shares one table across heads ([1, 2w+1, d]); [heads, 2w+1, d] broadcasts too.
        self.emb_rel_k = nn.Parameter(torch.zeros(1, 2 * window_size + 1, self.k_channels))
        self.emb_rel_v = nn.Parameter(torch.zeros(1, 2 * window_size + 1, self.k_channels))

    def forward(self, x: Tensor, attn_mask: Tensor) -> Tensor:
        b, c, t = x.shape
        h, d, w = self.n_heads, self.k_channels, self.window_size
        query = self.conv_q(x).view(b, h, d, t).transpose(2, 3) / math.sqrt(d)
        key = self.conv_k(x).view(b, h, d, t).transpose(2, 3)
        value = self.conv_v(x).view(b, h, d, t).transpose(2, 3)

        # Relative logits are only non-zero within the window, so compute them
        # as [t, 2w+1] and place them on the band instead of Piper's [t, 2t-1]
        # skew trick: same sums, far less work on long sentences.
        positions = torch.arange(t, device=x.device)
        offset = positions.unsqueeze(0) - positions.unsqueeze(1) + w  # [t(query), t(key)]
        in_band = (offset >= 0) & (offset <= 2 * w)
        # emb @ query^T rather than query @ emb^T: nothing folds the table into an
        # anonymous constant on ONNX export, so exports keep its name (as Piper's do).
        rel_logits = torch.matmul(self.emb_rel_k, query.transpose(-2, -1)).transpose(-2, -1)  # [b, h, t, 2w+1]
        band_logits = rel_logits.gather(-1, offset.clamp(0, 2 * w).expand(b, h, t, t))
        scores = torch.matmul(query, key.transpose(-2, -1)) + band_logits * in_band
        scores = scores.masked_fill(attn_mask == 0, -1e4)
        p_attn = F.softmax(scores, dim=-1)

        key_index = positions.unsqueeze(1) + torch.arange(2 * w + 1, device=x.device) - w  # [t, 2w+1]
        key_valid = (key_index >= 0) & (key_index < t)
        rel_weights = p_attn.gather(-1, key_index.clamp(0, t - 1).expand(b, h, t, 2 * w + 1)) * key_valid
        output = torch.matmul(p_attn, value) + torch.matmul(rel_weights, self.emb_rel_v)
        return self.conv_o(output.transpose(2, 3).reshape(b, c, t))


class FFN(nn.Module):
    def __init__(self, channels: int, filter_channels: int, kernel_size: int) -> None:
        super().__init__()
        self.conv_1 = nn.Conv1d(channels, filter_channels, kernel_size, padding=kernel_size // 2)
        self.conv_2 = nn.Conv1d(filter_channels, channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: Tensor, x_mask: Tensor) -> Tensor:
        x = torch.relu(self.conv_1(x * x_mask))
        return self.conv_2(x * x_mask) * x_mask


class Encoder(nn.Module):
    def __init__(self, hp: VitsHyperParams) -> None:
        super().__init__()
        c = hp.hidden_channels
        self.attn_layers = nn.ModuleList(
            RelativeSelfAttention(c, hp.n_heads, hp.window_size) for _ in range(hp.n_layers)
        )
        self.norm_layers_1 = nn.ModuleList(LayerNorm(c) for _ in range(hp.n_layers))
        self.ffn_layers = nn.ModuleList(FFN(c, hp.filter_channels, hp.kernel_size) for _ in range(hp.n_layers))
        self.norm_layers_2 = nn.ModuleList(LayerNorm(c) for _ in range(hp.n_layers))

    def forward(self, x: Tensor, x_mask: Tensor) -> Tensor:
        attn_mask = x_mask.unsqueeze(2) * x_mask.unsqueeze(-1)
        x = x * x_mask
        layers = zip(self.attn_layers, self.norm_layers_1, self.ffn_layers, self.norm_layers_2, strict=True)
        for attn, norm_1, ffn, norm_2 in layers:
            x = norm_1(x + attn(x, attn_mask))
            x = norm_2(x + ffn(x, x_mask))
        return x * x_mask


class TextEncoder(nn.Module):
    def __init__(self, hp: VitsHyperParams) -> None:
        super().__init__()
        self.hidden_channels = hp.hidden_channels
        self.inter_channels = hp.inter_channels
        self.emb = nn.Embedding(hp.n_vocab, hp.hidden_channels)
        self.encoder = Encoder(hp)
        self.proj = nn.Conv1d(hp.hidden_channels, hp.inter_channels * 2, 1)

    def forward(self, ids: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        x = (self.emb(ids) * math.sqrt(self.hidden_channels)).transpose(1, -1)
        x_mask = sequence_mask(lengths, ids.size(1)).to(x.dtype)
        x = self.encoder(x, x_mask)
        m, logs = torch.split(self.proj(x) * x_mask, self.inter_channels, dim=1)
        return x, m, logs, x_mask
