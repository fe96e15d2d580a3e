# Failure probe 20 -- task: gelu
# mistake: BLOCK_SIZE is both tuned by @triton.autotune and passed explicitly at the launch.
# expect: runtime_error
# cause: an autotuned kernel gets its meta-parameters from the autotune configs, so passing one of
#   them (BLOCK_SIZE=...) at the launch raises "Conflicting meta-parameters"; omit the tuned
#   parameters and compute the grid from a lambda over meta.

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
        triton.Config({"BLOCK_SIZE": 4096}, num_warps=8),
    ],
    key=["n_elements"],
)
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
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        gelu_kernel[grid](x, y, n_elements, BLOCK_SIZE=BLOCK_SIZE)  # the mistake: tuned param
        return y
