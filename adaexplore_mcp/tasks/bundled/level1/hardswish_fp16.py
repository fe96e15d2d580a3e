"""Hardswish on a float16 tensor.

Elementwise and memory-bound, in half precision: the kernel moves 2-byte values, so it needs
wide vectorized loads to reach full bandwidth. The inputs are scaled so that all three pieces
of the function (zero below -3, identity above 3, the quadratic between) are exercised.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardswish(x)


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16) * 3]


def get_init_inputs():
    return []


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"batch_size": 4, "dim": 1024}
ODD_SHAPES = [{"batch_size": 7, "dim": 1000}]
