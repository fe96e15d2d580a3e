"""cuDNN's convolution kept (with its bias); the channel scale and the tanh in Triton."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def scale_tanh_kernel(y_ptr, scale_ptr, out_ptr, plane, channels, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    channel = (offsets // plane) % channels
    y = tl.load(y_ptr + offsets, mask=mask) * tl.load(scale_ptr + channel, mask=mask)
    tl.store(out_ptr + offsets, 1.0 - 2.0 / (tl.exp(2.0 * y) + 1.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.scale = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.1 + 1.0)

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias, padding=1).contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        BLOCK = 1024
        plane = y.shape[2] * y.shape[3]
        scale_tanh_kernel[(triton.cdiv(n, BLOCK),)](
            y, self.scale.contiguous(), out, plane, y.shape[1], n, BLOCK=BLOCK
        )
        return out
