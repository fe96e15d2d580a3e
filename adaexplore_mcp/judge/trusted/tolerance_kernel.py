"""Whether an output is within its tolerance and finite, in one pass over it and its reference.

``Comparison.close_enough`` checks every timed call's outputs. With torch's operators that is
about ten kernels an output (the difference, two absolute values, the bound, the comparison,
two ``isfinite``, their conjunctions, the reduction), each reading or writing a tensor of the
output's size: on an H200 the timed checks of causal_attention_scores took 43 ms of each
span's 130 or so, most of it waiting for those kernels (``notes/trusted-judge-h200.md``).
This kernel reads each element of the output and of the reference once and decides as they
do, in float32 (what ``close_enough`` widens float16, bfloat16 and float32 to), with no fused
multiply-add: the bound is rounded as torch's separate multiply and add round it. It runs in
the trusted process, on memory no candidate can reach.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# the dtypes this kernel compares; the others (integers, float64, complex, float8) and an atol
# scaled by the output's RMS stay with torch's operators
DTYPES = (torch.float16, torch.bfloat16, torch.float32)
BLOCK = 4096
# NaN and Inf are the values whose magnitude is not at most float32's largest finite number
FLOAT32_MAX: tl.constexpr = tl.constexpr(3.4028234663852886e38)


@triton.jit(do_not_specialize=["n"])
def outside_kernel(actual_ptr, expected_ptr, outside_ptr, n, atol, rtol, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    actual = tl.load(actual_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    expected = tl.load(expected_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    bound = atol + rtol * tl.abs(expected)
    within = tl.abs(actual - expected) <= bound
    finite = (tl.abs(actual) <= FLOAT32_MAX) & (tl.abs(expected) <= FLOAT32_MAX)
    outside = mask & ~(within & finite)
    tl.atomic_max(outside_ptr, tl.max(outside.to(tl.int32), axis=0))


def applies(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    """Whether this kernel compares these two: of one dtype it takes, on one GPU."""
    return (
        expected.dtype in DTYPES
        and actual.dtype == expected.dtype
        and expected.device.type == "cuda"
        and actual.device == expected.device
    )


def within(actual: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """True (a boolean on the device: no wait for it) when every element of ``actual`` is
    finite and within ``atol + rtol * |expected|`` of a finite ``expected``, as
    ``Comparison.close_enough`` decides it with torch's operators. The two have one shape."""
    # the values as torch's operators see them: a lazily negated view's sign applied, and laid
    # out densely (the kernel reads memory, not strides)
    actual, expected = actual.resolve_neg().contiguous(), expected.resolve_neg().contiguous()
    count = expected.numel()
    if not count:
        return torch.ones((), dtype=torch.bool, device=expected.device)
    outside = torch.zeros(1, dtype=torch.int32, device=expected.device)
    grid = (triton.cdiv(count, BLOCK),)
    outside_kernel[grid](
        actual, expected, outside, count, atol, rtol, BLOCK=BLOCK, enable_fp_fusion=False
    )
    return outside[0] == 0
