"""Fused residual add + RMSNorm, fp16: each program normalises ROWS rows as one 2-D block."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

ROWS = 2  # rows a program holds at once


@triton.jit
def add_rmsnorm_block(
    x_ptr, r_ptr, w_ptr, h_ptr, y_ptr, n_rows, n_cols, eps,
    ROWS: tl.constexpr, BLOCK: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offsets = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    r = tl.load(r_ptr + offsets, mask=mask, other=0.0)
    h = x + r  # fp16 add, rounded like the reference's
    tl.store(h_ptr + offsets, h, mask=mask)
    hf = h.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    y = hf * rstd[:, None] * w[None, :]
    tl.store(y_ptr + offsets, y.to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden, dtype=torch.float16))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        x = x.contiguous()
        residual = residual.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        h = torch.empty_like(x)
        y = torch.empty_like(x)
        block = triton.next_power_of_2(n_cols)
        num_warps = max(4, min(16, ROWS * block // 256))
        grid = (triton.cdiv(n_rows, ROWS),)
        add_rmsnorm_block[grid](
            x, residual, self.weight, h, y, n_rows, n_cols, self.eps,
            ROWS=ROWS, BLOCK=block, num_warps=num_warps,
        )
        return y, h
