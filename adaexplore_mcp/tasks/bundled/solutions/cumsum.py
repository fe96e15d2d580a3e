"""Triton solution for level1/cumsum: one program per row, blocked scan with a carry.

Each program scans its row BLOCK_SIZE elements at a time: tl.cumsum gives the inclusive scan of
the chunk, the running total of all previous chunks is added, and the chunk's sum becomes the new
running total. The loop-carried dependency is a single scalar, so chunk loads still overlap.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_BLOCK_SIZE = 1024


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    cols = tl.arange(0, BLOCK_SIZE)

    carry = tl.zeros([], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0)
        tl.store(y_row + start + cols, tl.cumsum(x, axis=0) + carry, mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        x2d = x.view(-1, n_cols)
        y = torch.empty_like(x2d)

        BLOCK_SIZE = min(triton.next_power_of_2(n_cols), MAX_BLOCK_SIZE)
        num_warps = 4 if BLOCK_SIZE <= 512 else 8
        cumsum_kernel[(x2d.shape[0],)](
            x2d, y, n_cols, x2d.stride(0), y.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
        )
        return y.view(x.shape)
