# Failure probe 05 -- task: rmsnorm
# mistake: a torch function (torch.rsqrt) is called inside the @triton.jit kernel.
# expect: error (compile_error in the CPU interpreter; on the GPU Triton raises a RuntimeError,
#   "Unsupported function referenced", at the first launch)
# cause: a @triton.jit kernel can only call triton.language functions and other jitted
#   functions, so a torch call on a block fails; use the tl equivalent (tl.rsqrt, tl.exp, ...).

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, stride_x, stride_y, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    rstd = torch.rsqrt(mean_sq + eps)  # the mistake: torch inside the kernel
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride_y + cols, x * rstd * w, mask=mask)


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
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        rmsnorm_kernel[(x2d.shape[0],)](
            x2d,
            self.weight.contiguous(),
            y,
            n_cols,
            x2d.stride(0),
            y.stride(0),
            self.eps,
            BLOCK_SIZE=BLOCK_SIZE,
            num_warps=4,
        )
        return y.view(x.shape)
