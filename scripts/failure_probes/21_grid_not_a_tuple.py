# Failure probe 21 -- task: gelu
# mistake: the launch grid is a bare int (kernel[n_blocks]) instead of a tuple or a callable.
# expect: runtime_error
# cause: kernel[grid] needs a tuple of up to three ints (or a function of the meta-parameters
#   returning one), so a bare int raises a TypeError at launch; write kernel[(n_blocks,)].

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
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
        n_blocks = triton.cdiv(n_elements, BLOCK_SIZE)
        gelu_kernel[n_blocks](x, y, n_elements, BLOCK_SIZE=BLOCK_SIZE)  # the mistake: an int
        return y
