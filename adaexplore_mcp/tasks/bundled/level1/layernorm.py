"""LayerNorm over the last dimension with a learnable weight and bias, float32.

One row per token, 4096 features: the kernel needs the row mean and variance before it can
normalize, so it either holds the row on chip or reads it twice. The affine parameters are
perturbed away from their ones/zeros initialization, so they must really be applied.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        with torch.no_grad():
            self.ln.weight.add_(0.1 * torch.randn(dim))
            self.ln.bias.add_(0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 8192
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"batch_size": 8, "dim": 256}
ODD_SHAPES = [{"batch_size": 7, "dim": 1000}, {"batch_size": 33, "dim": 127}]
