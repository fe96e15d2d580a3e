"""Fused residual add + RMSNorm, fp16: one program per row, the row walked in chunks twice."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

CHUNK = 1024  # elements of a row handled per loop iteration


@triton.jit
def add_rmsnorm_kernel(
    x_ptr, r_ptr, w_ptr, h_ptr, y_ptr, n_cols, eps, CHUNK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    cols = tl.arange(0, CHUNK)
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + base + start + cols, mask=mask, other=0.0)
        r = tl.load(r_ptr + base + start + cols, mask=mask, other=0.0)
        h = x + r  # fp16 add, rounded like the reference's
        tl.store(h_ptr + base + start + cols, h, mask=mask)
        hf = h.to(tl.float32)
        acc += hf * hf
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, CHUNK):
        mask = start + cols < n_cols
        h = tl.load(h_ptr + base + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + start + cols, (h * rstd * w).to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden, dtype=torch.float16))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        x = x.contiguous()
        residual = residual.contiguous()
        n_cols = x.shape[-1]
        rows = x.numel() // n_cols
        h = torch.empty_like(x)
        y = torch.empty_like(x)
        add_rmsnorm_kernel[(rows,)](
            x, residual, self.weight, h, y, n_cols, self.eps, CHUNK=CHUNK
        )
        return y, h
