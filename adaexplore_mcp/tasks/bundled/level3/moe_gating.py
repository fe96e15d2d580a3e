"""Mixture-of-experts router (Mixtral style): softmax over expert logits, top-2, renormalised.

logits = x @ W^T in float32 (x and W are float16), probs = softmax(logits), then the two largest
probabilities per token and their expert indices; the weights are renormalised to sum to 1.
Returns (weights [T, 2] float32, indices [T, 2] int64, largest first). With only a handful of
experts the GEMM is a skinny one (N = 8) that is bound by reading x, and the softmax, top-k and
renormalisation all fit in its epilogue, one token row per accumulator row.

The indices are compared exactly, so they must not depend on rounding: x and W lie on
power-of-two grids (x on multiples of 2^-7 in [-2, 2], W on multiples of 2^-14), every product
is exact in float32 and every partial sum is a multiple of 2^-21 far below 2^3, so the float32
logits are exact for any summation order (float16 inputs with float32 accumulation included).
Exact ties remain possible but rare (about one run in a hundred at the benchmark shape); like
the reference's stable sort, a kernel must break them towards the lower expert index.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, hidden: int, num_experts: int, top_k: int):
        super().__init__()
        weight = torch.randint(-384, 385, (num_experts, hidden)).to(torch.float16) * 2.0**-14
        self.weight = nn.Parameter(weight)
        self.top_k = top_k

    def forward(self, x: torch.Tensor):
        logits = F.linear(x.float(), self.weight.float())
        probs = torch.softmax(logits, dim=-1)
        top_p, top_i = torch.sort(probs, dim=-1, descending=True, stable=True)
        top_p, top_i = top_p[:, : self.top_k], top_i[:, : self.top_k]
        return top_p / top_p.sum(dim=-1, keepdim=True), top_i


num_tokens = 8192
hidden = 4096
num_experts = 8
top_k = 2


def get_inputs():
    return [torch.randint(-256, 257, (num_tokens, hidden)).to(torch.float16) * 2.0**-7]


def get_init_inputs():
    return [hidden, num_experts, top_k]


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"num_tokens": 64, "hidden": 256, "num_experts": 8}
ODD_SHAPES = [
    {"num_tokens": 33, "hidden": 127, "num_experts": 8},
    {"num_tokens": 100, "hidden": 200, "num_experts": 6},
]
