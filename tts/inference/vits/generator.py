"""Piper's generator (``model_g``) at inference, assembled from its parts.

Submodule and parameter names follow Piper's state dict (``enc_p``, ``dp``,
``flow``, ``dec``, ``emb_g``), so its checkpoints and ONNX initializers load
by name (``weights.py``). Weight norm is folded into plain convolutions, and
nothing of training is here (no posterior encoder, no discriminators).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .decoder import Generator
from .duration import StochasticDurationPredictor
from .flows import ResidualCouplingBlock
from .hparams import VitsHyperParams
from .text_encoder import TextEncoder, sequence_mask


@dataclass
class Prior:
    """The sampled prior of a padded batch: flow input, frame counts and durations."""

    z_p: Tensor  # [b, inter_channels, frames], zero beyond each item's length
    frame_lengths: Tensor  # [b]
    durations: Tensor  # [b, phonemes] frames per input id (long)
    g: Tensor | None  # speaker conditioning [b, gin, 1]


class VitsGenerator(nn.Module):
    """Piper's ``model_g`` at inference: ids -> prior -> flows -> audio.

    The flows and the decoder only look a bounded number of frames around
    each frame (``flow_receptive_field``, ``decoder_receptive_field``), so
    callers may run them on overlapping windows of the prior.
    """

    def __init__(self, hp: VitsHyperParams) -> None:
        super().__init__()
        self.hp = hp
        # Registration order follows Piper's SynthesizerTrn so exports name parameters alike.
        self.enc_p = TextEncoder(hp)
        self.dec = Generator(hp)
        self.flow = ResidualCouplingBlock(hp)
        self.dp = StochasticDurationPredictor(hp)
        if hp.n_speakers > 1:
            self.emb_g = nn.Embedding(hp.n_speakers, hp.gin_channels)

    def speaker_conditioning(self, speaker_ids: Tensor | None) -> Tensor | None:
        if self.hp.n_speakers <= 1 or speaker_ids is None:
            return None
        return self.emb_g(speaker_ids).unsqueeze(-1)

    def infer_prior(
        self,
        ids: Tensor,
        lengths: Tensor,
        *,
        noise_scale: Tensor,
        length_scale: Tensor,
        noise_w: Tensor,
        speaker_ids: Tensor | None = None,
        generators: Sequence[tuple[torch.Generator, torch.Generator] | None] | None = None,
        lengths_list: Sequence[int] | None = None,
    ) -> Prior:
        """Text encoder, durations and prior sampling for a padded batch; scales are per item ``[b]``.

        ``generators``: per item, ``None`` (the global generator) or CPU generators for the
        duration noise and the prior noise. A seeded item's noise covers only its own
        length, so it is the same alone or in any batch (``lengths_list``: the items' lengths).
        """
        g = self.speaker_conditioning(speaker_ids)
        x, m_p, logs_p, x_mask = self.enc_p(ids, lengths)
        b, _, t = x.shape
        noise = torch.randn(b, 2, t, device=x.device, dtype=x.dtype)
        seeded = generators is not None and any(gen is not None for gen in generators)
        if seeded and generators is not None:
            sizes = list(lengths_list) if lengths_list is not None else lengths.tolist()
            for row, gens in enumerate(generators):
                if gens is not None:
                    own = torch.randn(2, sizes[row], generator=gens[0], dtype=torch.float32)
                    noise[row, :, : sizes[row]] = own.to(device=x.device, dtype=x.dtype)
        noise = noise * noise_w.view(-1, 1, 1)
        logw = self.dp(x, x_mask, g, noise)
        w_ceil = torch.ceil(torch.exp(logw) * x_mask * length_scale.view(-1, 1, 1))[:, 0]  # [b, t]
        frame_lengths = torch.clamp_min(w_ceil.sum(1), 1).long()
        frames = int(frame_lengths.max())

        # Each frame takes the prior of the phoneme whose cumulative duration
        # covers it: a gather instead of VITS's [frames, phonemes] path matmul.
        ends = torch.cumsum(w_ceil, dim=1)
        positions = torch.arange(frames, device=x.device, dtype=ends.dtype).expand(b, frames).contiguous()
        phoneme = torch.searchsorted(ends, positions, right=True)  # [b, frames]
        covered = (phoneme < t).unsqueeze(1).to(x.dtype)
        index = phoneme.clamp(max=t - 1).unsqueeze(1).expand(-1, m_p.size(1), -1)
        m = m_p.gather(2, index) * covered
        logs = logs_p.gather(2, index) * covered
        eps = torch.randn_like(m)
        if seeded and generators is not None:
            own_frames = frame_lengths.tolist()
            for row, gens in enumerate(generators):
                if gens is not None:
                    own = torch.randn(m.size(1), own_frames[row], generator=gens[1], dtype=torch.float32)
                    eps[row, :, : own_frames[row]] = own.to(device=x.device, dtype=x.dtype)
        z_p = m + eps * torch.exp(logs) * noise_scale.view(-1, 1, 1)
        z_p = z_p * sequence_mask(frame_lengths, frames).to(x.dtype)
        return Prior(z_p=z_p, frame_lengths=frame_lengths, durations=w_ceil.long(), g=g)

    def latent(self, z_p: Tensor, y_mask: Tensor, g: Tensor | None) -> Tensor:
        """Reverse flows: prior sample -> decoder input, zero outside ``y_mask``."""
        return self.flow(z_p, y_mask, g) * y_mask

    def decode(self, z: Tensor, g: Tensor | None) -> Tensor:
        """Latent ``[b, c, frames]`` -> float32 audio ``[b, frames * hop]``."""
        return self.dec.waveform(z, g)
