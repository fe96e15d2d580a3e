# Failure probe 17 -- task: cumsum
# mistake: a loop-carried accumulator starts as the integer literal 0 and becomes float32 in the
#   loop (carry = 0; carry += tl.sum(x)).
# expect: gpu-only compile_error (the CPU interpreter runs the loop as Python and accepts it)
# cause: a variable carried through a Triton loop must keep one type, so initialising it with an
#   int literal and adding float32 values fails to compile on the GPU; initialise it as 0.0 or
#   tl.zeros([], dtype=tl.float32).

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    carry = 0  # the mistake: int32, re-assigned to float32 below
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=0.0)
        tl.store(y_ptr + row * stride_y + start + cols, tl.cumsum(x, axis=0) + carry, mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        x2d = x.view(-1, n_cols)
        y = torch.empty_like(x2d)
        BLOCK_SIZE = min(triton.next_power_of_2(n_cols), 1024)
        cumsum_kernel[(x2d.shape[0],)](
            x2d, y, n_cols, x2d.stride(0), y.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=4
        )
        return y.view(x.shape)
