"""RMSNorm over the last dimension with a learnable weight, float32.

As in LLaMA-style models: `x * rsqrt(mean(x^2) + eps) * w`. A single statistic per row makes
this the simplest normalization to fuse into one pass over a row held on chip; the weight is
initialized away from ones so it must really be applied.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


batch_size = 8192
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"batch_size": 8, "dim": 256}
ODD_SHAPES = [{"batch_size": 7, "dim": 1000}, {"batch_size": 33, "dim": 127}]
