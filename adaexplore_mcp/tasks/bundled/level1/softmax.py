"""Row-wise softmax over the last dimension, float32.

Each 8192-element row needs its max and its sum of exponentials before any output can be
written; a fast kernel keeps the row on chip between the passes (or uses an online max/sum)
so the tensor is read from global memory once.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


batch_size = 4096
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"batch_size": 8, "dim": 256}
ODD_SHAPES = [{"batch_size": 7, "dim": 1000}, {"batch_size": 33, "dim": 127}]
