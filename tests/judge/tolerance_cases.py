"""Outputs and references on the edges of a tolerance, to hold ``tolerance_kernel.within`` to
the decision torch's operators make (``Comparison.close_enough`` on the CPU)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from adaexplore_mcp.judge.policy import Tolerance
from adaexplore_mcp.judge.trusted.compare import Comparison
from adaexplore_mcp.judge.trusted.tolerance_kernel import BLOCK, DTYPES

# past a multiple of the kernel's block, so that the last program has a tail
COUNT = 2 * BLOCK + 17
TOLERANCES = [(1e-4, 1e-4), (1e-2, 1e-2), (0.0, 0.0), (1e-5, 0.0), (0.0, 3e-3), (1e39, 1e39)]


def _pairs(dtype: torch.dtype, atol: float, rtol: float) -> Iterator[tuple[str, Any, Any]]:
    generator = torch.Generator().manual_seed(7)
    big = torch.finfo(dtype).max
    expected = torch.randn(COUNT, generator=generator).to(dtype)
    noise = torch.randn(COUNT, generator=generator) * (atol + rtol) / 4
    yield "close", (expected.float() + noise).to(dtype), expected
    yield "equal", expected.clone(), expected
    for index in (0, BLOCK - 1, BLOCK, COUNT - 1):  # each program's edges, and the tail's last
        far = expected.clone()
        far[index] = far[index] + 1
        yield f"one far at {index}", far, expected
    for value in (float("nan"), float("inf"), float("-inf")):
        for side in ("actual", "expected", "both"):
            actual, reference = expected.clone(), expected.clone()
            if side in ("actual", "both"):
                actual[COUNT - 1] = value
            if side in ("expected", "both"):
                reference[COUNT - 1] = value
            yield f"{value} in {side}", actual, reference
    largest = torch.full((COUNT,), big, dtype=dtype)
    yield "the largest finite", largest.clone(), largest
    yield "largest against its negative", largest.clone(), -largest
    # around the bound: 1 + the bound as torch computes it in float32, rounded to the dtype,
    # and two of the dtype's own steps either side of that, so that some lie within and some
    # beyond whatever the dtype's resolution
    ones = torch.ones(COUNT, dtype=dtype)
    edge = (1.0 + (atol + rtol * torch.ones((), dtype=torch.float32).abs())).to(dtype)
    for step in (-2, -1, 0, 1, 2):
        value = _stepped(edge, step)
        yield f"at the bound {step:+d}", torch.full((COUNT,), float(value), dtype=dtype), ones
    tiny = torch.full((COUNT,), torch.finfo(dtype).tiny / 4, dtype=dtype)  # subnormal
    yield "subnormal", tiny, torch.zeros(COUNT, dtype=dtype)
    square = expected[: 90 * 90].reshape(90, 90)
    yield "transposed", square.t().contiguous().t(), square.clone()
    yield "a lazily negated view", torch._neg_view(-expected), expected


def _stepped(value: torch.Tensor, steps: int) -> torch.Tensor:
    """``value`` (positive, 0-dim) moved by ``steps`` representable numbers of its dtype."""
    bits = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32}
    return (value.view(bits[value.dtype]) + steps).view(value.dtype)


def cases() -> Iterator[tuple[str, torch.Tensor, torch.Tensor, float, float]]:
    for dtype in DTYPES:
        for atol, rtol in TOLERANCES:
            for name, actual, expected in _pairs(dtype, atol, rtol):
                yield f"{dtype} atol={atol} rtol={rtol}: {name}", actual, expected, atol, rtol


def torchs_decision(actual: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> bool:
    comparison = Comparison({}, Tolerance(atol=atol, rtol=rtol))
    flag = comparison.close_enough(actual.cpu(), expected.cpu())
    assert flag is not None
    return bool(flag)
