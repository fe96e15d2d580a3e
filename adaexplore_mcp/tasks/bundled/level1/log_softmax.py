"""Log-softmax over the last dimension of vocabulary-sized logits, float32.

Rows have 32000 entries (a language-model vocabulary, not a power of two), too long to keep
comfortably in registers; the kernel needs the row max and log-sum-exp (an online update
saves a pass) and must compute `x - max - log(sum)` rather than `log(softmax)` to stay exact
for very negative entries.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=-1)


batch_size = 1024
dim = 32000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"batch_size": 8, "dim": 256}
ODD_SHAPES = [{"batch_size": 7, "dim": 1000}, {"batch_size": 33, "dim": 127}]
