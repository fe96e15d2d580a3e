"""cuBLAS's GEMM kept; the bias, the residual and the layer norm in one Triton pass per row."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_residual_norm_kernel(
    y_ptr, x_ptr, bias_ptr, gamma_ptr, beta_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    start = row * n_cols
    v = tl.load(y_ptr + start + cols, mask=mask, other=0.0)
    v += tl.load(x_ptr + start + cols, mask=mask, other=0.0)
    v += tl.load(bias_ptr + cols, mask=mask, other=0.0)
    mean = tl.sum(v, axis=0) / n_cols
    centered = tl.where(mask, v - mean, 0.0)
    var = tl.sum(centered * centered, axis=0) / n_cols
    normed = centered / tl.sqrt(var + eps)
    gamma = tl.load(gamma_ptr + cols, mask=mask)
    beta = tl.load(beta_ptr + cols, mask=mask)
    tl.store(out_ptr + start + cols, normed * gamma + beta, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        x = x.contiguous()
        y = torch.mm(x, self.linear.weight.t())
        out = torch.empty_like(y)
        rows, cols = y.shape
        bias_residual_norm_kernel[(rows,)](
            y,
            x,
            self.linear.bias,
            self.norm.weight,
            self.norm.bias,
            out,
            cols,
            self.norm.eps,
            BLOCK=triton.next_power_of_2(cols),
        )
        return out
