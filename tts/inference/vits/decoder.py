"""The HiFi-GAN decoder: latent frames -> waveform, ``hop_length`` samples per frame."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from .hparams import VitsHyperParams

LRELU_SLOPE = 0.1


class DecoderConv(nn.Conv1d):
    """A Conv1d that also takes ``[b, c, 1, t]`` channels-last input.

    The decoder's signals are long with few channels; oneDNN runs those about
    three times faster as 2-D channels-last convolutions than as 1-D ones.
    3-D input takes the plain path (and exports as a 1-D Conv, as Piper's).
    """

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() == 3:
            return super().forward(x)
        return F.conv2d(
            x,
            self.weight.unsqueeze(2),
            self.bias,
            (1, self.stride[0]),
            (0, int(self.padding[0])),
            (1, self.dilation[0]),
        )


class DecoderConvTranspose(nn.ConvTranspose1d):
    """A ConvTranspose1d that also takes ``[b, c, 1, t]`` channels-last input (see ``DecoderConv``)."""

    def forward(self, x: Tensor) -> Tensor:  # type: ignore[override]
        if x.dim() == 3:
            return super().forward(x)
        stride, padding = (1, self.stride[0]), (0, int(self.padding[0]))
        return F.conv_transpose2d(x, self.weight.unsqueeze(2), self.bias, stride, padding)


class ResBlock1(nn.Module):
    def __init__(self, channels: int, kernel_size: int, dilations: tuple[int, ...]) -> None:
        super().__init__()
        self.convs1 = nn.ModuleList(
            DecoderConv(channels, channels, kernel_size, dilation=d, padding=(kernel_size * d - d) // 2)
            for d in dilations
        )
        self.convs2 = nn.ModuleList(
            DecoderConv(channels, channels, kernel_size, padding=kernel_size // 2) for _ in dilations
        )

    def forward(self, x: Tensor) -> Tensor:
        for c1, c2 in zip(self.convs1, self.convs2, strict=True):
            hidden = F.leaky_relu(c1(F.leaky_relu(x, LRELU_SLOPE)), LRELU_SLOPE, inplace=True)
            x = c2(hidden).add_(x)
        return x


class ResBlock2(nn.Module):
    def __init__(self, channels: int, kernel_size: int, dilations: tuple[int, ...]) -> None:
        super().__init__()
        self.convs = nn.ModuleList(
            DecoderConv(channels, channels, kernel_size, dilation=d, padding=(kernel_size * d - d) // 2)
            for d in dilations
        )

    def forward(self, x: Tensor) -> Tensor:
        for conv in self.convs:
            x = conv(F.leaky_relu(x, LRELU_SLOPE)).add_(x)
        return x


class Generator(nn.Module):
    """HiFi-GAN decoder: latent frames -> waveform (hop_length samples per frame)."""

    def __init__(self, hp: VitsHyperParams) -> None:
        super().__init__()
        self.num_kernels = len(hp.resblock_kernel_sizes)
        ch = hp.upsample_initial_channel
        self.conv_pre = DecoderConv(hp.inter_channels, ch, 7, padding=3)
        block = ResBlock1 if hp.resblock == "1" else ResBlock2
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        for i, (rate, kernel) in enumerate(zip(hp.upsample_rates, hp.upsample_kernel_sizes, strict=True)):
            ch = hp.upsample_initial_channel // (2 ** (i + 1))
            self.ups.append(DecoderConvTranspose(2 * ch, ch, kernel, rate, padding=(kernel - rate) // 2))
            for k, dilations in zip(hp.resblock_kernel_sizes, hp.resblock_dilation_sizes, strict=True):
                self.resblocks.append(block(ch, k, dilations))
        self.conv_post = DecoderConv(ch, 1, 7, padding=3, bias=False)
        if hp.gin_channels:
            self.cond = DecoderConv(hp.gin_channels, hp.upsample_initial_channel, 1)

    def forward(self, x: Tensor, g: Tensor | None = None) -> Tensor:
        # In-place updates wherever a tensor has no other reader: on CPU each
        # fresh long signal costs an allocation and page faults, not just a pass.
        x = self.conv_pre(x)
        if g is not None:
            x = x + self.cond(g)
        for i, up in enumerate(self.ups):
            x = up(F.leaky_relu(x, LRELU_SLOPE, inplace=True))
            blocks = self.resblocks[i * self.num_kernels : (i + 1) * self.num_kernels]
            xs = blocks[0](x)  # every block reads x, so none may change it
            for resblock in blocks[1:]:
                xs.add_(resblock(x))
            x = xs.div_(self.num_kernels)
        # Piper's last activation uses leaky_relu's default slope, not LRELU_SLOPE.
        return self.conv_post(F.leaky_relu(x, inplace=True)).tanh_()

    def waveform(self, z: Tensor, g: Tensor | None) -> Tensor:
        """Latent ``[b, c, frames]`` -> float32 audio ``[b, frames * hop]``, computed in this module's dtype."""
        dtype = self.conv_pre.weight.dtype
        x = z.to(dtype).unsqueeze(2).contiguous(memory_format=torch.channels_last)
        cond = None if g is None else g.to(dtype).unsqueeze(2)
        return self.forward(x, cond).reshape(z.size(0), -1).float()


def decoder_receptive_field(hp: VitsHyperParams) -> int:
    """How many latent frames on each side can change one decoder output sample."""
    frames = (7 - 1) / 2  # conv_pre
    scale = 1  # samples per latent frame at the current stage
    for rate, kernel in zip(hp.upsample_rates, hp.upsample_kernel_sizes, strict=True):
        frames += math.ceil(kernel / rate) / scale  # a transposed-conv output sees ceil(k/u) inputs each side
        scale *= rate
        per_block = []
        for k, dilations in zip(hp.resblock_kernel_sizes, hp.resblock_dilation_sizes, strict=True):
            reach = sum((k - 1) // 2 * d for d in dilations)
            if hp.resblock == "1":
                reach += (k - 1) // 2 * len(dilations)  # the undilated second conv of each pair
            per_block.append(reach)
        frames += max(per_block) / scale
    frames += (7 - 1) / 2 / scale  # conv_post
    return math.ceil(frames)
