"""Linear layer followed by ReLU in float16: relu(x @ W^T + b).

A tensor-core GEMM with an epilogue: the bias add and the ReLU belong in the GEMM's output stage,
so the pre-activation never goes to memory. Accumulate in float32 and round once at the store;
the tails of M, N and K must be masked when the sizes are not multiples of the tile.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


batch_size = 4096
in_features = 4096
out_features = 4096


def get_inputs():
    return [torch.randn(batch_size, in_features, dtype=torch.float16)]


def get_init_inputs():
    return [in_features, out_features]


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"batch_size": 64, "in_features": 64, "out_features": 64}
ODD_SHAPES = [
    {"batch_size": 33, "in_features": 127, "out_features": 100},
    {"batch_size": 100, "in_features": 40, "out_features": 7},
]
