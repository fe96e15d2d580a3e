# Failure probe 09 -- task: sum_rows
# mistake: loads without a tail mask, although the row length is not a multiple of the block.
# expect: incorrect
# cause: without a mask the last block of a row reads past its end (into the next row or past
#   the tensor), so sums are wrong whenever the row length is not a multiple of the block; mask
#   every load and store with offsets < n.

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_rows_kernel(x_ptr, y_ptr, n_cols, stride_row, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    row_ptr = x_ptr + row.to(tl.int64) * stride_row
    cols = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        acc += tl.load(row_ptr + start + cols)  # the mistake: no mask for the row's tail
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
        BLOCK_SIZE = 128
        sum_rows_kernel[(n_rows,)](x2d, y, n_cols, x2d.stride(0), BLOCK_SIZE=BLOCK_SIZE)
        return y.view(x.shape[:-1])
