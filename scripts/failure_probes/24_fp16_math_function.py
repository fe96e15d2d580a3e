# Failure probe 24 -- task: rmsnorm_residual_fp16
# mistake: the mean of squares is computed on the float16 block (times a constexpr 1/N) and passed
#   to tl.rsqrt without an upcast to float32.
# expect: compile_error
# cause: tl.exp, tl.log, tl.sqrt, tl.rsqrt and the other math functions accept only float32/float64
#   blocks, so calling them on float16 values fails to compile; upcast with .to(tl.float32) first
#   (which also keeps the reduction accurate).

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_rmsnorm_kernel(
    x_ptr,
    r_ptr,
    w_ptr,
    y_ptr,
    h_ptr,
    N_COLS: tl.constexpr,
    INV_N: tl.constexpr,
    EPS: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(axis=0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N_COLS
    x = tl.load(x_ptr + row * N_COLS + cols, mask=mask, other=0.0)
    r = tl.load(r_ptr + row * N_COLS + cols, mask=mask, other=0.0)
    h = x + r
    tl.store(h_ptr + row * N_COLS + cols, h, mask=mask)
    mean_sq = tl.sum(h * h, axis=0) * INV_N
    rstd = tl.rsqrt(mean_sq + EPS)  # the mistake: a float16 argument
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * N_COLS + cols, (h * rstd * w).to(tl.float16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden, dtype=torch.float16))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        x = x.contiguous()
        residual = residual.contiguous()
        n_cols = x.shape[-1]
        y = torch.empty_like(x)
        h = torch.empty_like(x)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        add_rmsnorm_kernel[(x.numel() // n_cols,)](
            x,
            residual,
            self.weight,
            y,
            h,
            N_COLS=n_cols,
            INV_N=1.0 / n_cols,
            EPS=self.eps,
            BLOCK_SIZE=BLOCK_SIZE,
            num_warps=8,
        )
        return y, h
