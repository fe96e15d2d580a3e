"""Pre-norm transformer MLP block in float16: y = x + fc2(gelu(fc1(layernorm(x)))).

A LayerNorm, two GEMMs with a 4x expansion, an exact (erf) GELU and a residual add. The GEMMs
dominate; the wins are fusing the LayerNorm into the first GEMM's input (or a single cheap pass),
GELU into its epilogue and the residual add into the second GEMM's epilogue, so the [tokens,
4*hidden] activation is written and read once. The LayerNorm weight and bias are random, so they
must be applied.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, hidden: int, ffn_hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, dtype=torch.float16)
        self.fc1 = nn.Linear(hidden, ffn_hidden, dtype=torch.float16)
        self.fc2 = nn.Linear(ffn_hidden, hidden, dtype=torch.float16)
        # Non-trivial norm parameters, so a kernel that ignores them fails.
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.1 * torch.randn(hidden))
            self.norm.bias.copy_(0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


num_tokens = 4096
hidden = 2048
ffn_hidden = 8192


def get_inputs():
    return [torch.randn(num_tokens, hidden, dtype=torch.float16)]


def get_init_inputs():
    return [hidden, ffn_hidden]


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"num_tokens": 32, "hidden": 64, "ffn_hidden": 256}
ODD_SHAPES = [{"num_tokens": 33, "hidden": 100, "ffn_hidden": 300}]
