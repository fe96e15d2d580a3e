# Failure probe 23 -- task: sum_rows
# mistake: tl.static_range over a runtime bound (the row length), to "unroll" the column loop.
# expect: gpu-only compile_error (the CPU interpreter treats static_range as a Python range)
# cause: tl.static_range is unrolled at compile time and needs constexpr start, end and step, so
#   a bound that is a runtime argument fails to compile on the GPU; use range() for runtime
#   bounds.

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
    for start in tl.static_range(0, n_cols, BLOCK_SIZE):  # the mistake: n_cols is not constexpr
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
        BLOCK_SIZE = min(triton.next_power_of_2(n_cols), 2048)
        sum_rows_kernel[(n_rows,)](x2d, y, n_cols, x2d.stride(0), BLOCK_SIZE=BLOCK_SIZE)
        return y.view(x.shape[:-1])
