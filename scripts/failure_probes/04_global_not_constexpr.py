# Failure probe 04 -- task: gelu
# mistake: a module-level Python float (not a tl.constexpr) is read inside the @triton.jit kernel.
# expect: compile_error (raised by the judge's source check on every device, before Triton runs:
#   Triton's CPU interpreter accepts the kernel, its GPU compiler rejects it)
# cause: the Triton compiler only lets a kernel read module-level globals that are tl.constexpr
#   objects, so a plain float constant is a compile error on the GPU; wrap it in tl.constexpr(...)
#   or pass it as an argument.

import torch
import torch.nn as nn
import triton
import triton.language as tl

SQRT_2_OVER_PI = 0.7978845608028654  # the mistake: a plain float, not tl.constexpr(...)
GELU_COEFF = 0.044715


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    u = SQRT_2_OVER_PI * (x + GELU_COEFF * x * x * x)
    y = x / (1.0 + tl.exp(-2.0 * u))
    tl.store(y_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n_elements = x.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        gelu_kernel[grid](x, y, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
        return y
