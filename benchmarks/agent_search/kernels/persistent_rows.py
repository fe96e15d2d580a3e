"""Fused residual add + RMSNorm, fp16: a persistent grid, each program walking rows by a stride."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_rmsnorm_rows(
    x_ptr, r_ptr, w_ptr, h_ptr, y_ptr, n_rows, n_cols, eps, BLOCK: tl.constexpr
):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)  # loaded once per program
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        base = n_cols.to(tl.int64) * row  # 64-bit offsets: rows * cols passes 2**31 on big inputs
        x = tl.load(x_ptr + base + cols, mask=mask, other=0.0)
        r = tl.load(r_ptr + base + cols, mask=mask, other=0.0)
        h = x + r
        tl.store(h_ptr + base + cols, h, mask=mask)
        hf = h.to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=0) / n_cols + eps)
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
        num_warps = max(4, min(16, block // 512))
        if x.is_cuda:
            programs = torch.cuda.get_device_properties(x.device).multi_processor_count * 4
        else:
            programs = 64
        grid = (max(1, min(rows, programs)),)
        add_rmsnorm_rows[grid](
            x, residual, self.weight, h, y, rows, n_cols, self.eps, BLOCK=block, num_warps=num_warps
        )
        return y, h
