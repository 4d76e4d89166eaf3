"""Running the generator in padded batches: whole-segment priors, then overlapping windows.

A window's flows and decoder see enough frames on each side (their receptive
fields) that the audio it keeps equals what one pass over the whole segment
computes; padding a batch to a length bucket only changes samples within the
decoder's receptive field of a segment's end. No threads here: the engine
calls these directly or through its batchers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..batcher import bucket_length
from ..engine import derive_seed
from ..windows import Window, plan_windows
from .generator import VitsGenerator
from .text_encoder import sequence_mask

__all__ = ["BatchRunner", "PriorJob", "SegmentPrior", "Window", "WindowJob", "plan_windows"]


@dataclass
class PriorJob:
    """One segment to run through the text encoder and duration predictor."""

    ids: Sequence[int]
    noise_scale: float
    length_scale: float
    noise_w: float
    speaker_id: int | None
    #: Noise seed (``SynthesisParams.seed``); ``None`` draws from torch's global generator.
    seed: int | None = None


@dataclass
class SegmentPrior:
    """One segment's sampled prior, cut to its own length."""

    z_p: torch.Tensor  # [channels, frames] on the model's device
    durations: np.ndarray  # frames per input id
    g: torch.Tensor | None  # [gin, 1]


@dataclass
class WindowJob:
    """One window to run through the flows and the decoder."""

    z_p: torch.Tensor  # the window's flow context, [channels, frames]
    g: torch.Tensor | None
    window: Window


def _generators(seed: int | None) -> tuple[torch.Generator, torch.Generator] | None:
    """CPU generators for one seeded item's duration and prior noise (the same seeds as the ONNX engine's)."""
    if seed is None:
        return None
    return (
        torch.Generator().manual_seed(derive_seed(seed, "noise", 0)),
        torch.Generator().manual_seed(derive_seed(seed, "noise", 1)),
    )


class BatchRunner:
    """Runs padded batches of priors and windows on the model (no threading here).

    Kept apart from the engine so batcher threads hold this, not the engine:
    a dropped engine is collected, and its finalizer stops the threads.
    """

    def __init__(self, model: VitsGenerator, device: torch.device, *, bucketed: bool) -> None:
        self.model = model
        self.device = device
        self.hop_length = model.hp.hop_length
        self.bucketed = bucketed

    def padded_length(self, length: int) -> int:
        return bucket_length(length) if self.bucketed else length

    @torch.inference_mode()
    def run_priors(self, jobs: list[PriorJob]) -> list[SegmentPrior]:
        lengths = [len(job.ids) for job in jobs]
        ids = torch.zeros(len(jobs), self.padded_length(max(lengths)), dtype=torch.long)
        for row, job in enumerate(jobs):
            ids[row, : len(job.ids)] = torch.as_tensor(job.ids, dtype=torch.long)
        speakers = [job.speaker_id for job in jobs]
        prior = self.model.infer_prior(
            ids.to(self.device),
            torch.tensor(lengths, device=self.device),
            noise_scale=torch.tensor([job.noise_scale for job in jobs], device=self.device),
            length_scale=torch.tensor([job.length_scale for job in jobs], device=self.device),
            noise_w=torch.tensor([job.noise_w for job in jobs], device=self.device),
            speaker_ids=None if None in speakers else torch.tensor(speakers, device=self.device),
            generators=[_generators(job.seed) for job in jobs],
            lengths_list=lengths,
        )
        durations = prior.durations.cpu().numpy()
        frames = prior.frame_lengths.tolist()
        return [
            SegmentPrior(
                z_p=prior.z_p[row, :, : frames[row]],
                durations=durations[row, : lengths[row]],
                g=None if prior.g is None else prior.g[row],
            )
            for row in range(len(jobs))
        ]

    @torch.inference_mode()
    def run_windows(self, jobs: list[WindowJob]) -> list[np.ndarray]:
        flow_lengths = [job.z_p.size(-1) for job in jobs]
        width = self.padded_length(max(flow_lengths))
        z_p = torch.stack([F.pad(job.z_p, (0, width - job.z_p.size(-1))) for job in jobs])
        y_mask = sequence_mask(torch.tensor(flow_lengths, device=self.device), width).to(z_p.dtype)
        g = None if jobs[0].g is None else torch.stack([job.g for job in jobs if job.g is not None])
        z = self.model.latent(z_p, y_mask, g)

        spans = [
            (job.window.decoder[0] - job.window.flow[0], job.window.decoder[1] - job.window.flow[0]) for job in jobs
        ]
        dec_width = self.padded_length(max(end - start for start, end in spans))
        dec_in = torch.stack(
            [F.pad(z[row, :, start:end], (0, dec_width - (end - start))) for row, (start, end) in enumerate(spans)]
        )
        audio = self.model.decode(dec_in, g).cpu().numpy()

        hop = self.hop_length
        pieces = []
        for row, job in enumerate(jobs):
            (core_start, core_end), dec_start = job.window.core, job.window.decoder[0]
            pieces.append(np.clip(audio[row, (core_start - dec_start) * hop : (core_end - dec_start) * hop], -1.0, 1.0))
        return pieces
