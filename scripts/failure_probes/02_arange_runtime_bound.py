# Failure probe 02 -- task: sum_rows
# mistake: tl.arange bounded by a runtime kernel argument (the row length) instead of a constexpr.
# expect: compile_error
# cause: tl.arange needs compile-time (tl.constexpr) bounds, so a range over the runtime row
#   length does not compile; use a constexpr power-of-two block, loop over it and mask the tail.

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_rows_kernel(x_ptr, y_ptr, n_cols, stride_row):
    row = tl.program_id(axis=0)
    # The mistake: n_cols is an ordinary (runtime) argument.
    cols = tl.arange(0, n_cols)
    x = tl.load(x_ptr + row.to(tl.int64) * stride_row + cols)
    tl.store(y_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        x2d = x.view(-1, n_cols)
        n_rows = x2d.shape[0]
        y = x.new_empty(n_rows)
        sum_rows_kernel[(n_rows,)](x2d, y, n_cols, x2d.stride(0), num_warps=4)
        return y.view(x.shape[:-1])
