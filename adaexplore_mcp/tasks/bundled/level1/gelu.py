"""GELU with the tanh approximation, float32.

A purely elementwise, memory-bound operator: the whole cost is one read and one write of the
tensor, so the kernel wins by streaming wide contiguous blocks. The tanh must be built from
`exp` (or a sigmoid) in a way that does not overflow for large |x|.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"batch_size": 4, "dim": 1024}
ODD_SHAPES = [{"batch_size": 7, "dim": 1000}]
