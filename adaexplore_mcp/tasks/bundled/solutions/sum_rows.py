"""Triton solution for level1/sum_rows: one program per row, vector accumulator.

Each program walks its row in BLOCK_SIZE chunks, adding every chunk into a float32 vector
accumulator, and reduces the vector with tl.sum once at the end. Keeping BLOCK_SIZE partial
sums instead of one running scalar both vectorizes the loop and keeps long rows accurate.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_BLOCK_SIZE = 2048


@triton.jit
def sum_rows_kernel(x_ptr, y_ptr, n_cols, stride_row, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    row_ptr = x_ptr + row.to(tl.int64) * stride_row
    cols = tl.arange(0, BLOCK_SIZE)

    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        acc += tl.load(row_ptr + start + cols, mask=mask, other=0.0)

    tl.store(y_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        x2d = x.view(-1, n_cols)
        n_rows = x2d.shape[0]
        y = x.new_empty(n_rows)

        BLOCK_SIZE = min(triton.next_power_of_2(n_cols), MAX_BLOCK_SIZE)
        num_warps = 8 if BLOCK_SIZE >= 2048 else 4
        sum_rows_kernel[(n_rows,)](
            x2d, y, n_cols, x2d.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
        )
        return y.view(x.shape[:-1])
