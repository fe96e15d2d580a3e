"""A linear layer with ReLU, and kernels that keep torch's GEMM to different ends: the task and
the kernels of the operator-policy tests (judge, MCP tools, CLI)."""

from __future__ import annotations

from adaexplore_mcp.tasks import parse_task

LINEAR_RELU_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


batch_size = 16
in_features = 32
out_features = 24


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]


ODD_SHAPES = [{"batch_size": 5, "in_features": 7, "out_features": 9}]
"""
TASK = parse_task(LINEAR_RELU_TASK, name="linear_relu")

BIAS_RELU_KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(y_ptr, b_ptr, out_ptr, n_cols, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    y = tl.load(y_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets % n_cols, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(y + b, 0.0), mask=mask)


def bias_relu(y, bias, out):
    n = y.numel()
    bias_relu_kernel[(triton.cdiv(n, 256),)](y, bias, out, y.shape[-1], n, BLOCK=256)
    return out


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
"""

# cuBLAS's GEMM (here torch's CPU GEMM) kept, the bias and the ReLU fused in Triton
LIBRARY_GEMM_TRITON_EPILOGUE = (
    BIAS_RELU_KERNEL
    + """\
        y = torch.matmul(x, self.linear.weight.t())
        return bias_relu(y, self.linear.bias, torch.empty_like(y))
"""
)

# torch computes everything; the launch's result is thrown away
DISCARDED_DECOY = (
    BIAS_RELU_KERNEL
    + """\
        y = torch.matmul(x, self.linear.weight.t())
        bias_relu(y, self.linear.bias, torch.empty_like(y))
        return torch.relu(y + self.linear.bias)
"""
)

# torch computes everything; the launch writes a scratch buffer nothing reads
IRRELEVANT_DECOY = (
    BIAS_RELU_KERNEL
    + """\
        scratch = torch.empty_like(x)
        bias_relu(x, torch.zeros(x.shape[-1], device=x.device), scratch)
        return torch.relu(self.linear(x))
"""
)

TORCH_ONLY = (
    BIAS_RELU_KERNEL
    + """\
        return torch.relu(self.linear(x))
"""
)
