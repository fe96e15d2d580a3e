"""Compare a candidate's outputs with the reference's, in the trusted process."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from adaexplore_mcp.judge import policy
from adaexplore_mcp.judge.policy import Tolerance
from adaexplore_mcp.judge.result import Mismatch
from adaexplore_mcp.judge.trusted.shapes import is_float8


def as_outputs(value: Any) -> list[Any]:
    """The list of outputs of a forward call: a tensor is one output, a tuple/list is many."""
    if isinstance(value, tuple | list):
        return list(value)
    return [value]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tolerance_for(
    dtype: torch.dtype,
    tolerances: dict[str, Tolerance],
    override: Tolerance | None,
    forced: dict[str, Tolerance] | None = None,
) -> Tolerance:
    """The tolerance of an output of ``dtype``, as ``policy.tolerance_for`` decides it."""
    return policy.tolerance_for(dtype_name(dtype), tolerances, override, forced)


class Comparison:
    """Compares outputs with one tolerance policy (per-dtype ``tolerances``, the task's
    ``override``, a precision policy's ``forced`` ones) and keeps the running maxima over every
    comparison that passed."""

    def __init__(
        self,
        tolerances: dict[str, Tolerance],
        override: Tolerance | None,
        forced: dict[str, Tolerance] | None = None,
    ) -> None:
        self.tolerances = tolerances
        self.override = override
        self.forced = forced or {}
        self.max_abs_error = 0.0
        self.max_rel_error = 0.0

    def close_enough(self, actual: Any, expected: Any):  # -> torch.Tensor | None
        """Every output within tolerance and finite, as a boolean on the device (no wait for
        the GPU); None when the outputs differ in count, kind, shape or dtype. ``compare``
        says what is wrong where this is not true."""
        got, want = as_outputs(actual), as_outputs(expected)
        if len(got) != len(want):
            return None
        flags = []
        for a, e in zip(got, want, strict=True):
            a, e = _numbers_as_tensors(a, e)
            if type(a) is not torch.Tensor or a.shape != e.shape or a.dtype != e.dtype:
                return None
            if not e.numel():
                continue
            tol = tolerance_for(e.dtype, self.tolerances, self.override, self.forced)
            if _exact(e.dtype, tol):
                flags.append((a.to(e.device) == e).all())
                continue
            if e.device.type == "cuda" and tol.atol_scale == "absolute":
                # imported here: a CPU judge's trusted process never loads Triton
                from adaexplore_mcp.judge.trusted import tolerance_kernel

                if tolerance_kernel.applies(a, e):  # one pass, not ten (``tolerance_kernel``)
                    flags.append(tolerance_kernel.within(a, e, tol.atol, tol.rtol))
                    continue
            # float32 arithmetic is exact enough to tell a tolerance of 1e-4 or more, and a
            # quarter of float64's traffic on outputs of hundreds of MiB
            wide = torch.float64 if e.dtype in (torch.float64, torch.int64) else torch.float32
            if e.dtype.is_complex:
                wide = torch.complex128
            a_wide, e_wide = a.to(e.device, wide), e.to(wide)
            atol: float | torch.Tensor = tol.atol
            if tol.atol_scale == "output_rms":
                atol = tol.atol * _rms(e_wide)
            within = (a_wide - e_wide).abs() <= atol + tol.rtol * e_wide.abs()
            if e.dtype.is_floating_point or e.dtype.is_complex:
                # NaN and Inf never pass, in the output or in what it is held to: |0 - inf| is
                # within inf
                within = within & torch.isfinite(a_wide) & torch.isfinite(e_wide)
            flags.append(within.all())
        if not flags:
            return torch.tensor(True)
        return torch.stack(flags).all()

    def fresh(self) -> Comparison:
        """The same policy with its own maxima: for extra checks whose errors are not part of
        the reported correctness."""
        return Comparison(self.tolerances, self.override, self.forced)

    def compare(self, actual: Any, expected: Any, *, variant: str, trial: int) -> Mismatch | None:
        """None when every output matches; otherwise the first mismatch, fully described."""
        got, want = as_outputs(actual), as_outputs(expected)
        base: dict[str, Any] = {"variant": variant, "trial": trial}
        if len(got) != len(want):
            return Mismatch(
                **base,
                output_index=0,
                kind="count",
                numel=len(want),
                actual_value=float(len(got)),
                expected_value=float(len(want)),
            )
        for index, (a, e) in enumerate(zip(got, want, strict=True)):
            mismatch = self._compare_one(a, e, {**base, "output_index": index})
            if mismatch is not None:
                return mismatch
        return None

    def _compare_one(self, actual: Any, expected: Any, base: dict[str, Any]) -> Mismatch | None:
        actual, expected = _numbers_as_tensors(actual, expected)
        shape = list(expected.shape)
        if type(actual) is not torch.Tensor:
            return Mismatch(
                **base,
                kind="type",
                expected_shape=shape,
                expected_dtype=dtype_name(expected.dtype),
                actual_dtype=getattr(actual, "type_name", type(actual).__name__),
            )
        info = {
            "expected_shape": shape,
            "actual_shape": list(actual.shape),
            "expected_dtype": dtype_name(expected.dtype),
            "actual_dtype": dtype_name(actual.dtype),
            "numel": expected.numel(),
        }
        if actual.shape != expected.shape:
            return Mismatch(**base, **info, kind="shape")
        if actual.dtype != expected.dtype:
            return Mismatch(**base, **info, kind="dtype")
        if actual.device != expected.device:
            actual = actual.to(expected.device)
        tol = tolerance_for(expected.dtype, self.tolerances, self.override, self.forced)
        if is_float8(expected.dtype):  # torch computes nothing in float8 on the CPU
            actual, expected = actual.float(), expected.float()
        # complex numbers compare by their distance, both parts at once
        wide = torch.complex128 if expected.dtype.is_complex else torch.float64
        e64 = expected.to(wide)
        atol = tol.atol
        if tol.atol_scale == "output_rms" and expected.numel():
            # of the magnitudes, as the timed check takes it (the real parts alone, before)
            atol = tol.atol * float(_rms(e64))
        info |= {"atol": atol, "rtol": tol.rtol}
        if expected.numel() == 0:
            return None

        if expected.dtype.is_floating_point or expected.dtype.is_complex:
            nonfinite = ~torch.isfinite(actual)
            count = int(nonfinite.sum())
            if count:
                index = _unravel(int(nonfinite.flatten().nonzero()[0]), shape)
                return Mismatch(
                    **base,
                    **info,
                    kind="nonfinite",
                    nonfinite_count=count,
                    first_bad_index=index,
                    expected_value=_item(expected, index),
                    actual_value=_item(actual, index),
                )
        a64 = actual.to(wide)

        diff = (a64 - e64).abs()
        if _exact(expected.dtype, tol):
            bad = actual.to(expected.device) != expected
        else:
            bad = diff > (atol + tol.rtol * e64.abs())
            if expected.dtype.is_floating_point or expected.dtype.is_complex:
                bad = bad | ~torch.isfinite(e64)  # within inf of inf is no match
        max_abs = float(diff.max())
        rel = diff / torch.clamp(e64.abs(), min=max(atol, 1e-30))
        max_rel = float(rel.max())
        count = int(bad.sum())
        if not count:
            self.max_abs_error = max(self.max_abs_error, max_abs)
            self.max_rel_error = max(self.max_rel_error, max_rel)
            return None
        norm = float(e64.norm())
        index = _unravel(int(bad.flatten().nonzero()[0]), shape)
        return Mismatch(
            **base,
            **info,
            kind="values",
            mismatch_count=count,
            max_abs_error=max_abs,
            max_rel_error=max_rel,
            rel_l2_error=float((a64 - e64).norm()) / norm if norm else None,
            first_bad_index=index,
            expected_value=_item(expected, index),
            actual_value=_item(actual, index),
        )


def _rms(values: torch.Tensor) -> torch.Tensor:
    """The root mean square of ``values``' magnitudes, on their device (no wait), scaled by the
    largest so that no square overflows: squared as they were, outputs of 2e19 (float32) or
    1.3e154 (float64) made it inf, and a tolerance of inf passed any output. Where it is not
    finite (an inf among the values, which never pass) it is 1, and the tolerance plain."""
    magnitude = values.abs()
    peak = magnitude.amax()
    magnitude /= torch.where(peak > 0, peak, torch.ones_like(peak))
    rms = peak * magnitude.square_().mean().sqrt()
    return torch.where(torch.isfinite(rms), rms, torch.ones_like(rms))


def _numbers_as_tensors(actual: Any, expected: Any) -> tuple[Any, torch.Tensor]:
    """A Python number the reference returned as a tensor, and the candidate's as one where it
    returned a number of the same kind."""
    if isinstance(expected, torch.Tensor):
        return actual, expected
    if type(actual) is type(expected):
        actual = _number_tensor(actual)
    return actual, _number_tensor(expected)


_FLOAT32_MAX = torch.finfo(torch.float32).max


def _number_tensor(number: Any) -> torch.Tensor:
    """A Python number as torch makes it (a float as float32, an int as int64), but in float64
    where that would not hold it: a reference's float of 1e173 became float32's inf, against
    which any finite output was within tolerance (inf > inf is false), and an int past int64's
    range would not convert at all."""
    if isinstance(number, bool):
        return torch.as_tensor(number)
    if isinstance(number, int):
        if -(2**63) <= number < 2**63:
            return torch.as_tensor(number)
        return torch.tensor(float(number), dtype=torch.float64)
    if isinstance(number, (float, complex)):
        parts = (number.real, number.imag) if isinstance(number, complex) else (number,)
        if any(math.isfinite(part) and abs(part) > _FLOAT32_MAX for part in parts):
            wide = torch.complex128 if isinstance(number, complex) else torch.float64
            return torch.tensor(number, dtype=wide)
    return torch.as_tensor(number)


def _exact(dtype: torch.dtype, tol: Tolerance) -> bool:
    """Integers and booleans with no tolerance compare in their own type: as float64 (or
    float32) an int64 of 2**60 and one off by one are the same number."""
    return not (dtype.is_floating_point or dtype.is_complex) and not tol.atol and not tol.rtol


def _unravel(flat: int, shape: Sequence[int]) -> list[int]:
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return list(reversed(index))


def _item(tensor: torch.Tensor, index: list[int]) -> float | None:
    try:
        value = tensor[tuple(index)].item()
    except (IndexError, RuntimeError):
        return None
    return float(value.real) if isinstance(value, complex) else float(value)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Exact equality (NaN equal to NaN): an input must come back as it went in."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if is_float8(a.dtype):  # torch computes nothing in float8 on the CPU: compare the bits
        return bool(torch.equal(a.view(torch.uint8), b.view(torch.uint8)))
    if a.dtype.is_floating_point:
        return bool(torch.equal(a.isnan(), b.isnan())) and bool(
            torch.equal(torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0))
        )
    return bool(torch.equal(a, b))


def first_modified(before: list[Any], after: list[Any]) -> int | None:
    """The index of the first tensor argument that ``after`` no longer holds as in ``before``:
    changed, replaced by something else, or missing (``after`` comes from another process)."""
    for index, old in enumerate(before):
        new = after[index] if index < len(after) else None
        if isinstance(old, torch.Tensor) and not (
            isinstance(new, torch.Tensor) and same_bits(old, new)
        ):
            return index
    return None
