# Failure probe 14 -- task: hardswish_fp16
# mistake: the output is allocated with torch.empty(shape, device=...) and no dtype, so it is
#   float32 while the task's output is float16.
# expect: incorrect
# cause: torch.empty/zeros without dtype= allocate float32 (and tl.store silently converts to
#   the pointer's type), so a half-precision task returns the wrong dtype; allocate with
#   torch.empty_like(x) or dtype=x.dtype.

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def hardswish_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0
    tl.store(y_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape, device=x.device)  # the mistake: float32, not x.dtype
        n_elements = x.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        hardswish_kernel[grid](x, y, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
        return y
