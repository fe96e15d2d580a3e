# Failure probe 12 -- task: gemm_bias_relu
# mistake: W^T is taken as a view (weight.t()) and indexed as if it were a contiguous [K, N]
#   tensor; the kernel takes no strides.
# expect: incorrect
# cause: .t(), .transpose(), .permute() and slicing return views with other strides, so a kernel
#   that hardcodes row-major offsets reads the wrong elements; pass tensor.stride() values to the
#   kernel (or call .contiguous()).

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_bias_relu_kernel(
    x_ptr,
    wt_ptr,
    b_ptr,
    y_ptr,
    M,
    N,
    K,
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
        # The mistake: W^T assumed row-major [K, N], i.e. element (k, n) at k * N + n.
        b = tl.load(
            wt_ptr + ks[:, None] * N + offs_n[None, :],
            mask=mask_k[:, None] & mask_n[None, :],
            other=0.0,
        )
        acc = tl.dot(a, b, acc)

    bias = tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)
    acc = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(
        y_ptr + offs_m[:, None] * N + offs_n[None, :],
        acc.to(tl.float16),
        mask=mask_m[:, None] & mask_n[None, :],
    )


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        w_t = self.linear.weight.t()  # a [K, N] view of the [N, K] weight: strides (1, K)
        M, K = x.shape
        N = w_t.shape[1]
        y = torch.empty((M, N), dtype=x.dtype, device=x.device)
        BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        linear_bias_relu_kernel[grid](
            x,
            w_t,
            self.linear.bias,
            y,
            M,
            N,
            K,
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K,
            num_warps=4,
        )
        return y
