"""Sum over the last dimension of a 2-D float32 tensor.

A memory-bound row reduction: each 16384-element row collapses to one value, so a kernel
either loops over the row with a vector accumulator or splits rows across programs, and it
must keep float32 accumulation accurate enough for long rows.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=-1)


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"batch_size": 8, "dim": 256}
ODD_SHAPES = [{"batch_size": 7, "dim": 1000}, {"batch_size": 33, "dim": 127}]
