"""Triton solution for level1/layernorm: one program per row.

Rows up to MAX_ROW_BLOCK elements (the benchmark's 4096 included) are loaded once and kept in
registers: mean, then the variance of the centred row (two-pass, no cancellation), then
(x - mean) * rstd * w + b. Longer rows are read in chunks: once for the mean, once for the
variance and once more to write the output.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_ROW_BLOCK = 16384  # longest row held in registers by one program
LOOP_BLOCK = 4096  # chunk size for longer rows


@triton.jit
def layernorm_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
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
        mean = tl.sum(x, axis=0) / n_cols
        centred = tl.where(mask, x - mean, 0.0)
        var = tl.sum(centred * centred, axis=0) / n_cols
        rstd = 1.0 / tl.sqrt(var + eps)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0)
        tl.store(y_row + cols, centred * rstd * w + b, mask=mask)
    else:
        acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + cols < n_cols
            acc += tl.load(x_row + start + cols, mask=mask, other=0.0)
        mean = tl.sum(acc, axis=0) / n_cols

        acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0)
            centred = tl.where(mask, x - mean, 0.0)
            acc += centred * centred
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)

        for start in range(0, n_cols, BLOCK_SIZE):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0)
            w = tl.load(w_ptr + start + cols, mask=mask, other=0.0)
            b = tl.load(b_ptr + start + cols, mask=mask, other=0.0)
            tl.store(y_row + start + cols, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        # Same construction (and random draws) as the reference, so the seed gives the same weights.
        self.ln = nn.LayerNorm(dim)
        with torch.no_grad():
            self.ln.weight.add_(0.1 * torch.randn(dim))
            self.ln.bias.add_(0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        x2d = x.view(-1, n_cols)
        y = torch.empty_like(x2d)

        block = triton.next_power_of_2(n_cols)
        one_block = block <= MAX_ROW_BLOCK
        BLOCK_SIZE = block if one_block else LOOP_BLOCK
        num_warps = 4 if BLOCK_SIZE <= 1024 else (8 if BLOCK_SIZE <= 4096 else 16)
        layernorm_kernel[(x2d.shape[0],)](
            x2d,
            self.ln.weight.contiguous(),
            self.ln.bias.contiguous(),
            y,
            n_cols,
            x2d.stride(0),
            y.stride(0),
            self.ln.eps,
            BLOCK_SIZE=BLOCK_SIZE,
            ONE_BLOCK=one_block,
            num_warps=num_warps,
        )
        return y.view(x.shape)
