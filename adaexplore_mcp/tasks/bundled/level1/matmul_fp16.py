"""Square GEMM C = A @ B in float16.

The classic compute-bound kernel: 4096x4096x4096 needs tiles large enough to feed the tensor
cores (tl.dot on fp16 with fp32 accumulation), software pipelining over K, and a grouped
program order so neighbouring tiles reuse A and B from L2. Odd shapes check the M, N and K
tails.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 4096
K = 4096
N = 4096


def get_inputs():
    A = torch.randn(M, K, dtype=torch.float16)
    B = torch.randn(K, N, dtype=torch.float16)
    return [A, B]


def get_init_inputs():
    return []


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"M": 64, "K": 64, "N": 64}
ODD_SHAPES = [{"M": 127, "K": 200, "N": 95}]
