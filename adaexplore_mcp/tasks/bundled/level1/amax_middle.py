"""Max over the middle dimension of a [B, D, N] float32 tensor.

A strided reduction: the reduced axis is not contiguous, so a program should own a block of
the contiguous inner dimension and walk down D, keeping loads coalesced along N instead of
gathering one strided column at a time.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(x, dim=1)


batch_size = 16
reduce_dim = 4096
inner_dim = 1024


def get_inputs():
    return [torch.randn(batch_size, reduce_dim, inner_dim)]


def get_init_inputs():
    return []


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"batch_size": 2, "reduce_dim": 64, "inner_dim": 128}
ODD_SHAPES = [
    {"batch_size": 3, "reduce_dim": 127, "inner_dim": 33},
    {"batch_size": 2, "reduce_dim": 1000, "inner_dim": 7},
]
