"""Single-token decode attention over a padded KV cache, float16: one query per (sequence, head).

q [B, H, D] attends to the first lengths[b] positions of k_cache / v_cache [B, H, S_max, D];
the rest of the cache is padding. The kernel is bound by reading the cache, so it should read
only the valid prefix of each sequence (half of it here) and, because B * H programs over
sequences of very different lengths balance badly, split long sequences across programs and
merge the partial softmax results (flash-decoding). Every input set holds the same lengths,
spread evenly up to max_seq_len, in a random order: the same work in every set, so a kernel's
time does not depend on which set it was timed on. Queries are scaled by 3 so the
attention is peaked and the output is of order one rather than an average near zero.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(
        self,
        q: torch.Tensor,
        k_cache: torch.Tensor,
        v_cache: torch.Tensor,
        lengths: torch.Tensor,
    ) -> torch.Tensor:
        s_max = k_cache.shape[2]
        valid = torch.arange(s_max, device=q.device)[None, :] < lengths[:, None]
        out = F.scaled_dot_product_attention(
            q.unsqueeze(2), k_cache, v_cache, attn_mask=valid[:, None, None, :]
        )
        return out.squeeze(2)


batch_size = 32
num_heads = 32
max_seq_len = 4096
head_dim = 128


def get_inputs():
    cache_shape = (batch_size, num_heads, max_seq_len, head_dim)
    return [
        3.0 * torch.randn(batch_size, num_heads, head_dim, dtype=torch.float16),
        torch.randn(cache_shape, dtype=torch.float16),
        torch.randn(cache_shape, dtype=torch.float16),
        _lengths()[torch.randperm(batch_size)],
    ]


def _lengths():
    return torch.linspace(max_seq_len, 1, batch_size).round().to(torch.int32)


def get_init_inputs():
    return []


# adaexplore-mcp hints (KernelBench ignores these names)
# the valid prefixes hold half the cache (lengths spread evenly up to max_seq_len): a kernel that
# reads only them must not be taken for one that skipped its work
READ_FRACTION = 0.5
SMALL_SHAPES = {"batch_size": 2, "num_heads": 4, "max_seq_len": 128, "head_dim": 32}
ODD_SHAPES = [
    {"batch_size": 3, "num_heads": 5, "max_seq_len": 100, "head_dim": 48},
    {"batch_size": 7, "num_heads": 2, "max_seq_len": 333, "head_dim": 64},
]
