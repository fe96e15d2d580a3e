"""Triton solution for level1/gelu: one flat elementwise pass.

The tensor is viewed as 1-D and split into BLOCK_SIZE chunks, one per program. GELU's tanh
form is rewritten as x * sigmoid(2u), u = sqrt(2/pi) * (x + 0.044715 x^3), which needs a single
exp and cannot overflow into NaN: for large |x| the exp goes to 0 or inf and the result to x or -0.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

# A global read inside @triton.jit must be a tl.constexpr (the GPU compiler rejects others).
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)


@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements

    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
    # 0.5 * (1 + tanh(u)) == sigmoid(2u)
    y = x / (1.0 + tl.exp(-2.0 * u))
    tl.store(y_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n_elements = x.numel()
        BLOCK_SIZE = 4096
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        gelu_tanh_kernel[grid](x, y, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=8)
        return y
