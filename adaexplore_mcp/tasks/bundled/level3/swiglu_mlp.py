"""SwiGLU feed-forward block in float16 (LLaMA style, no biases): down(silu(gate(x)) * up(x)).

Three GEMMs. The gate and up projections read the same x and can run as one GEMM (or one
kernel with two accumulators) whose epilogue applies silu(g) * u, so only the gated [tokens,
ffn] activation reaches memory before the down projection. x is scaled by 2 so the output is of
order one rather than 0.1 (with default Linear initialisation).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, hidden: int, ffn_hidden: int):
        super().__init__()
        self.gate = nn.Linear(hidden, ffn_hidden, bias=False, dtype=torch.float16)
        self.up = nn.Linear(hidden, ffn_hidden, bias=False, dtype=torch.float16)
        self.down = nn.Linear(ffn_hidden, hidden, bias=False, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


num_tokens = 2048
hidden = 4096
ffn_hidden = 11008


def get_inputs():
    return [2.0 * torch.randn(num_tokens, hidden, dtype=torch.float16)]


def get_init_inputs():
    return [hidden, ffn_hidden]


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"num_tokens": 32, "hidden": 64, "ffn_hidden": 128}
ODD_SHAPES = [{"num_tokens": 33, "hidden": 100, "ffn_hidden": 300}]
