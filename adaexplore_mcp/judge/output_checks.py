"""Integrity checks on what a forward returned, before and beyond value comparison.

A result can match the reference and still be a fake: a tensor subclass that computes when
compared, a view of an input, a lower-precision tensor, the answer to an earlier call, or
values the judge itself left in the buffers. Runs inside the sandboxed child.
"""

from __future__ import annotations

from typing import Any

import torch

from adaexplore_mcp.judge.compare import Comparison, as_outputs
from adaexplore_mcp.judge.errors import Violation


def check_output_kinds(actual: Any, expected: Any) -> None:
    """Outputs must be plain, materialized tensors of the reference's dtype."""
    got, want = as_outputs(actual), as_outputs(expected)
    for index, (a, e) in enumerate(zip(got, want, strict=False)):
        if not isinstance(e, torch.Tensor):
            continue
        where = f"output {index}" if len(want) > 1 else "the output"
        if not isinstance(a, torch.Tensor):
            raise Violation(
                "lazy_output",
                f"{where} is a {type(a).__name__}, not a tensor; forward must return plain "
                "torch.Tensor results, computed before it returns",
            )
        if type(a) is not torch.Tensor and not isinstance(a, torch.nn.Parameter):
            raise Violation(
                "lazy_output",
                f"{where} is a tensor subclass ({type(a).__name__}); forward must return plain "
                "torch.Tensor results, computed before it returns",
            )
        if a.is_meta:
            raise Violation("lazy_output", f"{where} is a meta tensor and holds no values")
        if _downgrades(a.dtype, e.dtype):
            raise Violation(
                "precision_downgrade",
                f"{where} is {_name(a.dtype)} where the reference returns {_name(e.dtype)}; "
                f"compute in {_name(e.dtype)} or convert the result back before returning",
            )


def _downgrades(actual: torch.dtype, expected: torch.dtype) -> bool:
    if not (expected.is_floating_point and actual.is_floating_point):
        return False
    return actual != expected and torch.finfo(actual).eps > torch.finfo(expected).eps


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def aliases(outputs: Any, inputs: list[Any]) -> int | None:
    """The index of the first output that shares memory with an input, or None."""
    storages = {
        value.untyped_storage().data_ptr()
        for value in inputs
        if isinstance(value, torch.Tensor) and value.numel()
    }
    for index, output in enumerate(as_outputs(outputs)):
        if (
            isinstance(output, torch.Tensor)
            and output.numel()
            and output.untyped_storage().data_ptr() in storages
        ):
            return index
    return None


class Fingerprint:
    """Sums of an argument list, taken before the candidate runs: the judge's own copy of the
    inputs (the reference's) must be exactly as it was afterwards, even if the candidate found
    and changed it together with its own copy."""

    def __init__(self, values: list[Any]) -> None:
        self.sums = _sums(values)

    def unchanged(self, values: list[Any]) -> bool:
        return _sums(values) == self.sums


def _sums(values: list[Any]) -> list[tuple[float, float]]:
    sums = []
    for value in values:
        if isinstance(value, torch.Tensor) and value.numel():
            wide = value.detach().to(torch.float64)
            sums.append((float(wide.nan_to_num().sum()), float(wide.nan_to_num().abs().sum())))
    return sums


class EarlierResults:
    """The expected output of the last input set of each shape variant: a wrong result that
    matches it was cached from the earlier call (by pointer, shape or content)."""

    def __init__(self, comparison: Comparison) -> None:
        self.comparison = comparison
        self._expected: dict[str, Any] = {}

    def remember(self, variant: str, expected: Any) -> None:
        self._expected[variant] = [
            e.clone() if isinstance(e, torch.Tensor) else e for e in as_outputs(expected)
        ]

    def reused(self, variant: str, actual: Any) -> bool:
        earlier = self._expected.get(variant)
        if earlier is None:
            return False
        return (
            self.comparison.fresh().compare(as_outputs(actual), earlier, variant=variant, trial=-1)
            is None
        )
