"""Triton solution for decode_attention: one query per (sequence, head) over a padded KV cache.

Flash-decoding in two kernels. The split kernel gives each (batch, head) NUM_SPLITS programs,
each owning SPLIT_SIZE cache positions; a program reads only the positions below the sequence's
length (programs wholly past it exit at once), in BLOCK_N-position tiles, and keeps an online
softmax (running max m, running sum l, unnormalised output acc) in float32. With one query the
scores are a broadcast multiply and a row sum rather than a matmul. The combine kernel rescales
the partial results of a (batch, head) to a common max and divides by the total sum.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def decode_split_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    lengths_ptr,
    acc_ptr,
    m_ptr,
    l_ptr,
    H,
    D,
    NUM_SPLITS,
    stride_qb,
    stride_qh,
    stride_kb,
    stride_kh,
    stride_ks,
    stride_vb,
    stride_vh,
    stride_vs,
    qk_scale,  # head_dim ** -0.5 * log2(e)
    SPLIT_SIZE: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    bh = tl.program_id(0)
    split = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)

    length = tl.load(lengths_ptr + b)
    start = split * SPLIT_SIZE
    end = tl.minimum(start + SPLIT_SIZE, length)

    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    mask_d = offs_d < D
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + offs_d, mask=mask_d, other=0.0).to(
        tl.float32
    )
    k_base = k_ptr + b * stride_kb + h * stride_kh
    v_base = v_ptr + b * stride_vb + h * stride_vh

    m_i = float("-inf")
    l_i = 0.0
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for n in range(start, end, BLOCK_N):
        pos = n + offs_n
        mask_n = pos < end
        kv_mask = mask_n[:, None] & mask_d[None, :]
        k = tl.load(k_base + pos[:, None] * stride_ks + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.sum(k.to(tl.float32) * q[None, :], axis=1) * qk_scale
        s = tl.where(mask_n, s, float("-inf"))

        m_new = tl.maximum(m_i, tl.max(s, axis=0))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new)
        v = tl.load(v_base + pos[:, None] * stride_vs + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), axis=0)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        m_i = m_new

    # Splits past the sequence end store m = -inf, l = 0, acc = 0.
    part = bh * NUM_SPLITS + split
    tl.store(acc_ptr + part * D + offs_d, acc, mask=mask_d)
    tl.store(m_ptr + part, m_i)
    tl.store(l_ptr + part, l_i)


@triton.jit
def decode_combine_kernel(
    acc_ptr,
    m_ptr,
    l_ptr,
    out_ptr,
    D,
    NUM_SPLITS,
    BLOCK_S: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    bh = tl.program_id(0)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    mask_s = offs_s < NUM_SPLITS
    mask_d = offs_d < D
    part = bh * NUM_SPLITS + offs_s

    m = tl.load(m_ptr + part, mask=mask_s, other=float("-inf"))
    l = tl.load(l_ptr + part, mask=mask_s, other=0.0)
    # Split 0 always holds position 0 (lengths >= 1), so the max is finite.
    scale = tl.exp2(m - tl.max(m, axis=0))
    total = tl.sum(l * scale, axis=0)
    acc = tl.load(
        acc_ptr + part[:, None] * D + offs_d[None, :],
        mask=mask_s[:, None] & mask_d[None, :],
        other=0.0,
    )
    out = tl.sum(acc * scale[:, None], axis=0) / total
    tl.store(out_ptr + bh * D + offs_d, out.to(out_ptr.dtype.element_ty), mask=mask_d)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(
        self,
        q: torch.Tensor,
        k_cache: torch.Tensor,
        v_cache: torch.Tensor,
        lengths: torch.Tensor,
    ) -> torch.Tensor:
        B, H, S_max, D = k_cache.shape
        q = q.contiguous()
        k_cache = k_cache.contiguous()
        v_cache = v_cache.contiguous()
        lengths = lengths.contiguous()

        block_n = 64
        block_d = max(16, triton.next_power_of_2(D))
        # Up to 8 splits per sequence, each a multiple of BLOCK_N positions (512 at S_max 4096).
        split_size = max(block_n, min(512, triton.next_power_of_2(triton.cdiv(S_max, 8))))
        num_splits = triton.cdiv(S_max, split_size)

        part_acc = torch.empty((B * H, num_splits, D), dtype=torch.float32, device=q.device)
        part_m = torch.empty((B * H, num_splits), dtype=torch.float32, device=q.device)
        part_l = torch.empty((B * H, num_splits), dtype=torch.float32, device=q.device)
        out = torch.empty((B, H, D), dtype=q.dtype, device=q.device)

        qk_scale = D**-0.5 * math.log2(math.e)
        decode_split_kernel[(B * H, num_splits)](
            q,
            k_cache,
            v_cache,
            lengths,
            part_acc,
            part_m,
            part_l,
            H,
            D,
            num_splits,
            q.stride(0),
            q.stride(1),
            k_cache.stride(0),
            k_cache.stride(1),
            k_cache.stride(2),
            v_cache.stride(0),
            v_cache.stride(1),
            v_cache.stride(2),
            qk_scale,
            SPLIT_SIZE=split_size,
            BLOCK_N=block_n,
            BLOCK_D=block_d,
            num_warps=4,
        )
        decode_combine_kernel[(B * H,)](
            part_acc,
            part_m,
            part_l,
            out,
            D,
            num_splits,
            BLOCK_S=max(2, triton.next_power_of_2(num_splits)),
            BLOCK_D=block_d,
            num_warps=4,
        )
        return out
