"""Matrix-vector product y = A @ x, float32.

A GEMV is memory-bound: the 1 GiB matrix is read exactly once and each element is used in one
multiply-add, so tensor cores do not help. The kernel should stream rows of A with coalesced
loads, reuse x from cache, and reduce each row's dot product in float32.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, x)


M = 16384
K = 16384


def get_inputs():
    A = torch.randn(M, K)
    x = torch.randn(K)
    return [A, x]


def get_init_inputs():
    return []


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"M": 256, "K": 256}
ODD_SHAPES = [{"M": 1000, "K": 777}]
