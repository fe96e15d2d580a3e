# Failure probe 13 -- task: gelu
# mistake: the launch grid is computed with floor division (n // BLOCK) instead of a ceiling.
# expect: incorrect
# cause: n // BLOCK programs leave the last partial block unprocessed whenever n is not a
#   multiple of the block, so the tail of the output is never written; use triton.cdiv(n, BLOCK).

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = x / (1.0 + tl.exp(-2.0 * u))
    tl.store(y_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n_elements = x.numel()
        BLOCK_SIZE = 1024
        grid = (n_elements // BLOCK_SIZE,)  # the mistake: drops the partial last block
        gelu_kernel[grid](x, y, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
        return y
