# Failure probe 19 -- task: gemm_scale_residual
# mistake: tl.dot on float32 tiles with the default input precision, which is TF32 on NVIDIA GPUs.
# expect: gpu-only incorrect (the CPU interpreter multiplies in full float32)
# cause: tl.dot on float32 inputs rounds them to TF32 on NVIDIA GPUs by default, losing about
#   three digits, so a float32 GEMM misses a 1e-4 tolerance; pass input_precision="ieee" when
#   the reference is true float32.

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_scale_residual_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    r_ptr,
    y_ptr,
    M,
    N,
    K,
    scale,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        ks = k + offs_k
        mask_k = ks < K
        a = tl.load(
            x_ptr + offs_m[:, None] * K + ks[None, :],
            mask=mask_m[:, None] & mask_k[None, :],
            other=0.0,
        )
        # W is [N, K]; read W^T tile [BLOCK_K, BLOCK_N] with swapped strides.
        b = tl.load(
            w_ptr + offs_n[None, :] * K + ks[:, None],
            mask=mask_k[:, None] & mask_n[None, :],
            other=0.0,
        )
        acc = tl.dot(a, b, acc)  # the mistake: default input_precision (TF32 on the GPU)

    bias = tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)
    mask = mask_m[:, None] & mask_n[None, :]
    res = tl.load(r_ptr + offs_m[:, None] * N + offs_n[None, :], mask=mask, other=0.0)
    out = (acc + bias[None, :]) * scale + res
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        residual = residual.contiguous()
        w = self.linear.weight.contiguous()
        M, K = x.shape
        N = w.shape[0]
        y = torch.empty((M, N), dtype=x.dtype, device=x.device)
        BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        linear_scale_residual_kernel[grid](
            x,
            w,
            self.linear.bias,
            residual,
            y,
            M,
            N,
            K,
            self.scale,
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K,
            num_warps=4,
        )
        return y
