"""Triton solution for cross_entropy_rows: per-row logsumexp(logits) - logits[target], float32.

One program per row streams the row once in BLOCK_V chunks. Each lane of the block keeps its
own running max and running sum of exponentials (an online logsumexp per lane), so the loop
has no cross-lane reductions; the lanes are combined once at the end. The target logit is a
single gathered load. Lanes past the end of the row load -inf and contribute nothing.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cross_entropy_rows_kernel(
    logits_ptr,
    targets_ptr,
    loss_ptr,
    V,
    stride_row,
    BLOCK_V: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * stride_row
    offs = tl.arange(0, BLOCK_V)

    m_vec = tl.full((BLOCK_V,), float("-inf"), dtype=tl.float32)
    s_vec = tl.zeros((BLOCK_V,), dtype=tl.float32)
    for start in range(0, V, BLOCK_V):
        cols = start + offs
        x = tl.load(row_ptr + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m_vec, x)
        # A lane that has seen only padding keeps m = -inf; shift it by 0 to avoid inf - inf.
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)
        s_vec = s_vec * tl.exp(m_vec - shift) + tl.exp(x - shift)
        m_vec = m_new

    m = tl.max(m_vec, axis=0)
    total = tl.sum(s_vec * tl.exp(m_vec - m), axis=0)

    target = tl.load(targets_ptr + row)
    target_logit = tl.load(row_ptr + target).to(tl.float32)
    tl.store(loss_ptr + row, m + tl.log(total) - target_logit)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = logits.contiguous()
        targets = targets.contiguous()
        N, V = logits.shape
        loss = torch.empty((N,), dtype=logits.dtype, device=logits.device)
        block_v = min(4096, triton.next_power_of_2(V))
        cross_entropy_rows_kernel[(N,)](
            logits,
            targets,
            loss,
            V,
            logits.stride(0),
            BLOCK_V=block_v,
            num_warps=8 if block_v >= 2048 else 4,
        )
        return loss
