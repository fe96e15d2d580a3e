"""Fused residual add + RMSNorm, fp16: one program per row, the whole row held in registers."""

import torch
import torch.nn as nn
import triton
import triton.language as tl



@triton.jit
def add_rmsnorm_kernel(
    x_ptr, r_ptr, w_ptr, h_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # the whole row stays in registers: x and r are read once, h and y written once
    # x and r are read once and never again: keep them from displacing the weight in L2
    x = tl.load(x_ptr + base + cols, mask=mask, other=0.0, eviction_policy="evict_first")
    r = tl.load(r_ptr + base + cols, mask=mask, other=0.0, eviction_policy="evict_first")
    h = x + r  # fp16 add, rounded like the reference's
    tl.store(h_ptr + base + cols, h, mask=mask)
    hf = h.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    tl.store(y_ptr + base + cols, (hf * rstd * w).to(tl.float16), mask=mask)


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
        block = triton.next_power_of_2(n_cols)
        num_warps = max(4, min(16, block // 256))  # 8 fp16 elements a thread
        add_rmsnorm_kernel[(rows,)](
            x, residual, self.weight, h, y, n_cols, self.eps, BLOCK=block, num_warps=num_warps
        )
        return y, h
