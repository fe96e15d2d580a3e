# Failure probe 06 -- task: cumsum
# mistake: Python-style integer indexing of a block (x[BLOCK_SIZE - 1]) to read its last element.
# expect: compile_error
# cause: Triton blocks cannot be indexed with integers or slices (only None/: to add
#   dimensions), so reading one element as x[i] fails; reduce instead (tl.sum, tl.max) or use
#   tl.where with a mask and a reduction.

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    carry = tl.zeros([], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=0.0)
        scan = tl.cumsum(x, axis=0) + carry
        tl.store(y_ptr + row * stride_y + start + cols, scan, mask=mask)
        carry = scan[BLOCK_SIZE - 1]  # the mistake: integer indexing of a block


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
