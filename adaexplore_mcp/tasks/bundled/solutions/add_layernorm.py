"""Triton solution for add_layernorm: LayerNorm(x + residual) * weight + bias in float32.

One program per row. The whole row (hidden <= a few thousand) fits in one block of registers:
the program loads x and residual once, adds them, computes the mean and the centred variance
from the sum held in registers, and writes the normalised, scaled and shifted row. Lanes past
the end of the row are masked out of the loads, the variance and the store.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_layernorm_kernel(
    x_ptr,
    r_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    N,
    stride_x,
    stride_r,
    stride_y,
    eps,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N

    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0)
    h = x + r

    mean = tl.sum(h, axis=0) / N
    centred = tl.where(mask, h - mean, 0.0)
    var = tl.sum(centred * centred, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)

    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride_y + cols, centred * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        hidden = x.shape[-1]
        x2 = x.reshape(-1, hidden).contiguous()
        r2 = residual.reshape(-1, hidden).contiguous()
        y = torch.empty_like(x2)
        block_n = triton.next_power_of_2(hidden)
        num_warps = max(1, min(16, block_n // 512))
        add_layernorm_kernel[(x2.shape[0],)](
            x2,
            r2,
            self.weight.contiguous(),
            self.bias.contiguous(),
            y,
            hidden,
            x2.stride(0),
            r2.stride(0),
            y.stride(0),
            self.eps,
            BLOCK_N=block_n,
            num_warps=num_warps,
        )
        return y.view(x.shape)
