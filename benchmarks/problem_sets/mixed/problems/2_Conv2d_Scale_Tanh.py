import torch
import torch.nn as nn


class Model(nn.Module):
    """A 3x3 convolution, scaled by a learned per-channel factor, then tanh."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.scale = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.1 + 1.0)

    def forward(self, x):
        return torch.tanh(self.conv(x) * self.scale)


batch_size = 32
in_channels = 64
out_channels = 64
height = 64
width = 64
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
