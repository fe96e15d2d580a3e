# Failure probe 11 -- task: softmax
# mistake: online softmax with a per-lane running max starting at -inf and masked lanes loaded as
#   -inf, without guarding exp(-inf - (-inf)).
# expect: incorrect
# cause: a lane that has only seen masked (-inf) values computes exp(-inf - (-inf)) = NaN, which
#   the final sum spreads to the whole row; shift by 0 where the running max is still -inf.

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    cols = tl.arange(0, BLOCK_SIZE)

    m = tl.full([BLOCK_SIZE], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"))
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)  # the mistake: NaN when m_new is -inf
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)

    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"))
        tl.store(y_row + start + cols, tl.exp(x - row_max) / row_sum, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        x2d = x.view(-1, n_cols)
        y = torch.empty_like(x2d)
        BLOCK_SIZE = 1024  # chunked online pass, whatever the row length
        softmax_kernel[(x2d.shape[0],)](
            x2d, y, n_cols, x2d.stride(0), y.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=8
        )
        return y.view(x.shape)
