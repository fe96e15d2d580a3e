# Failure probe 15 -- task: decode_attention
# mistake: `break` inside a loop of a @triton.jit kernel (stop at the end of the sequence).
# expect: gpu-only compile_error (the CPU interpreter runs the loop as Python and accepts it)
# cause: the Triton compiler does not support break or continue in loops, so an early exit from
#   a range() loop fails to compile on the GPU; bound the loop by the runtime length instead.

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def decode_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    lengths_ptr,
    out_ptr,
    H,
    S_max,
    D,
    qk_scale,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    bh = tl.program_id(0).to(tl.int64)
    b = bh // H
    length = tl.load(lengths_ptr + b)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    mask_d = offs_d < D
    q = tl.load(q_ptr + bh * D + offs_d, mask=mask_d, other=0.0).to(tl.float32)
    k_base = k_ptr + bh * S_max * D
    v_base = v_ptr + bh * S_max * D

    m_i = float("-inf")
    l_i = 0.0
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for start in range(0, S_max, BLOCK_N):
        if start >= length:
            break  # the mistake: break is not supported by the Triton compiler
        pos = start + offs_n
        mask_n = pos < length
        kv_mask = mask_n[:, None] & mask_d[None, :]
        k = tl.load(k_base + pos[:, None] * D + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.sum(k.to(tl.float32) * q[None, :], axis=1) * qk_scale
        s = tl.where(mask_n, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=0))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new)
        v = tl.load(v_base + pos[:, None] * D + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), axis=0)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        m_i = m_new
    tl.store(out_ptr + bh * D + offs_d, (acc / l_i).to(out_ptr.dtype.element_ty), mask=mask_d)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k_cache, v_cache, lengths):
        B, H, S_max, D = k_cache.shape
        q = q.contiguous()
        k_cache = k_cache.contiguous()
        v_cache = v_cache.contiguous()
        out = torch.empty((B, H, D), dtype=q.dtype, device=q.device)
        qk_scale = D**-0.5 * math.log2(math.e)
        decode_kernel[(B * H,)](
            q,
            k_cache,
            v_cache,
            lengths,
            out,
            H,
            S_max,
            D,
            qk_scale,
            BLOCK_N=64,
            BLOCK_D=max(16, triton.next_power_of_2(D)),
            num_warps=4,
        )
        return out
