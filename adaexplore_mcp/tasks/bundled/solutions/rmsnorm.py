"""Triton solution for level1/rmsnorm: one program per row.

Rows up to MAX_ROW_BLOCK elements (the benchmark's 4096 included) are loaded once and kept in
registers: the mean of squares, rsqrt, and the scaled output come from the same load. Longer rows
are read twice in chunks, once for the sum of squares and once to write the output.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_ROW_BLOCK = 16384  # longest row held in registers by one program
LOOP_BLOCK = 4096  # chunk size for longer rows


@triton.jit
def rmsnorm_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    n_cols,
    stride_x,
    stride_y,
    eps,
    BLOCK_SIZE: tl.constexpr,
    ONE_BLOCK: tl.constexpr,
):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    cols = tl.arange(0, BLOCK_SIZE)

    if ONE_BLOCK:
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        tl.store(y_row + cols, x * rstd * w, mask=mask)
    else:
        acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0)
            acc += x * x
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)

        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0)
            w = tl.load(w_ptr + start + cols, mask=mask, other=0.0)
            tl.store(y_row + start + cols, x * rstd * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        x2d = x.view(-1, n_cols)
        y = torch.empty_like(x2d)

        block = triton.next_power_of_2(n_cols)
        one_block = block <= MAX_ROW_BLOCK
        BLOCK_SIZE = block if one_block else LOOP_BLOCK
        num_warps = 4 if BLOCK_SIZE <= 1024 else (8 if BLOCK_SIZE <= 4096 else 16)
        rmsnorm_kernel[(x2d.shape[0],)](
            x2d,
            self.weight.contiguous(),
            y,
            n_cols,
            x2d.stride(0),
            y.stride(0),
            self.eps,
            BLOCK_SIZE=BLOCK_SIZE,
            ONE_BLOCK=one_block,
            num_warps=num_warps,
        )
        return y.view(x.shape)
