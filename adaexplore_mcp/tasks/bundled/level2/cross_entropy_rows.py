"""Per-row cross-entropy of float32 logits [N, V] with integer targets (reduction='none').

Each row's loss is logsumexp(row) - row[target]: a streaming reduction over a vocabulary-sized
row that should read the logits exactly once (online max and sum), plus one gathered element.
There is one output per row, so nothing is averaged away. V is not a multiple of any block size
in the odd variants.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets, reduction="none")


num_rows = 4096
vocab_size = 32000


def get_inputs():
    return [torch.randn(num_rows, vocab_size), torch.randint(0, vocab_size, (num_rows,))]


def get_init_inputs():
    return []


# adaexplore-mcp shape sets (KernelBench ignores these names)
SMALL_SHAPES = {"num_rows": 16, "vocab_size": 512}
ODD_SHAPES = [
    {"num_rows": 7, "vocab_size": 1000},
    {"num_rows": 33, "vocab_size": 5003},
]
