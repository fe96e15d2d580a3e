# Failure probe 25 -- task: causal_attention_scores
# mistake: tl.reshape used to "transpose" a [BLOCK_N, BLOCK_D] K tile into [BLOCK_D, BLOCK_N].
# expect: incorrect
# cause: tl.reshape keeps the element order and only changes the shape, so reshaping [N, D] to
#   [D, N] scrambles the tile instead of transposing it; use tl.trans(x) (or x.T), or load the
#   transposed tile with swapped offsets.

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def causal_scores_kernel(
    q_ptr,
    k_ptr,
    out_ptr,
    S,
    D,
    qk_scale,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    q_base = q_ptr + bh * S * D
    k_base = k_ptr + bh * S * D
    out_base = out_ptr + bh * S * S
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    mask_m = offs_m < S
    mask_d = offs_d < D
    q = tl.load(
        q_base + offs_m[:, None] * D + offs_d[None, :],
        mask=mask_m[:, None] & mask_d[None, :],
        other=0.0,
    )

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start_n in range(0, S, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(
            k_base + cols[:, None] * D + offs_d[None, :],
            mask=(cols[:, None] < S) & mask_d[None, :],
            other=0.0,
        )
        kt = tl.reshape(k, (BLOCK_D, BLOCK_N))  # the mistake: reshape is not a transpose
        s = tl.dot(q, kt) * qk_scale
        s = tl.where((cols[None, :] <= offs_m[:, None]) & (cols[None, :] < S), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        l_i = l_i * tl.exp2(m_i - m_new) + tl.sum(tl.exp2(s - m_new[:, None]), axis=1)
        m_i = m_new

    for start_n in range(0, S, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(
            k_base + cols[:, None] * D + offs_d[None, :],
            mask=(cols[:, None] < S) & mask_d[None, :],
            other=0.0,
        )
        kt = tl.reshape(k, (BLOCK_D, BLOCK_N))
        s = tl.dot(q, kt) * qk_scale
        s = tl.where((cols[None, :] <= offs_m[:, None]) & (cols[None, :] < S), s, float("-inf"))
        p = tl.exp2(s - m_i[:, None]) / l_i[:, None]
        tl.store(
            out_base + offs_m[:, None] * S + cols[None, :],
            p.to(out_ptr.dtype.element_ty),
            mask=mask_m[:, None] & (cols[None, :] < S),
        )


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        B, H, S, D = q.shape
        q = q.contiguous()
        k = k.contiguous()
        out = torch.empty((B, H, S, S), dtype=q.dtype, device=q.device)
        BLOCK = 64
        grid = (triton.cdiv(S, BLOCK), B * H)
        causal_scores_kernel[grid](
            q,
            k,
            out,
            S,
            D,
            D**-0.5 * math.log2(math.e),
            BLOCK_M=BLOCK,
            BLOCK_N=BLOCK,
            BLOCK_D=max(16, triton.next_power_of_2(D)),
            num_warps=4,
        )
        return out
