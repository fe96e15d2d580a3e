"""cuBLAS's GEMM kept; the bias and the GELU fused into one Triton epilogue."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_gelu_kernel(y_ptr, bias_ptr, out_ptr, n_cols, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    y = tl.load(y_ptr + offsets, mask=mask) + tl.load(bias_ptr + offsets % n_cols, mask=mask)
    inner = 0.7978845608028654 * (y + 0.044715 * y * y * y)
    tanh = 1.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0)
    tl.store(out_ptr + offsets, 0.5 * y * (1.0 + tanh), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.mm(x, self.linear.weight.t())
        out = torch.empty_like(y)
        n = y.numel()
        BLOCK = 1024
        grid = (triton.cdiv(n, BLOCK),)
        bias_gelu_kernel[grid](y, self.linear.bias, out, y.shape[1], n, BLOCK=BLOCK)
        return out
