# Failure probe 01 -- task: softmax
# mistake: tl.arange over a range that is not a power of two (the block is sized to the row).
# expect: compile_error
# cause: tl.arange only accepts power-of-two ranges, so sizing the block exactly to a row of
#   1000 columns fails to compile; round the block up with triton.next_power_of_2 and mask.

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
        # The mistake: the block is exactly one row wide (1000 and 127 are not powers of two).
        BLOCK_SIZE = n_cols
        softmax_kernel[(x2d.shape[0],)](
            x2d, y, n_cols, x2d.stride(0), y.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=4
        )
        return y.view(x.shape)
