# Failure probe 18 -- task: softmax
# mistake: num_warps computed with true division, so the launch gets a float (e.g. 4.0).
# expect: gpu-only error (the CPU interpreter ignores num_warps)
# cause: num_warps must be a Python int that is a power of two; a float from `/` or an odd count
#   fails when the GPU compiler checks its options, while the interpreter ignores it; use `//`
#   and triton.next_power_of_2.

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=float("-inf"))
    numerator = tl.exp(x - tl.max(x, axis=0))
    y = numerator / tl.sum(numerator, axis=0)
    tl.store(y_ptr + row * stride_y + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        x2d = x.view(-1, n_cols)
        y = torch.empty_like(x2d)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        num_warps = min(max(BLOCK_SIZE / 256, 1), 16)  # the mistake: a float
        softmax_kernel[(x2d.shape[0],)](
            x2d, y, n_cols, x2d.stride(0), y.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
        )
        return y.view(x.shape)
