# Failure probe 22 -- task: matvec
# mistake: tl.dot of a 2-D tile with a 1-D vector block (a matrix-vector product via tl.dot).
# expect: compile_error
# cause: tl.dot only multiplies 2-D (or batched 3-D) blocks, so a tile times a 1-D vector fails
#   to compile; for matrix-vector products use tl.sum(tile * vec[None, :], axis=1).

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matvec_kernel(
    a_ptr, x_ptr, y_ptr, M, K, stride_am, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr
):
    pid = tl.program_id(axis=0)
    offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        ks = k + offs_k
        mask_k = ks < K
        a = tl.load(
            a_ptr + offs_m[:, None].to(tl.int64) * stride_am + ks[None, :],
            mask=mask_m[:, None] & mask_k[None, :],
            other=0.0,
        )
        x = tl.load(x_ptr + ks, mask=mask_k, other=0.0)
        acc += tl.dot(a, x)  # the mistake: x is a 1-D block
    tl.store(y_ptr + offs_m, acc, mask=mask_m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        A = A.contiguous()
        x = x.contiguous()
        M, K = A.shape
        y = torch.empty(M, dtype=A.dtype, device=A.device)
        BLOCK_M, BLOCK_K = 64, 128
        matvec_kernel[(triton.cdiv(M, BLOCK_M),)](
            A, x, y, M, K, A.stride(0), BLOCK_M=BLOCK_M, BLOCK_K=BLOCK_K, num_warps=4
        )
        return y
