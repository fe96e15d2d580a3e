"""What the speed of light is measured against, in the trusted process: the bytes a call moves,
and the GPU's matmul peak in the math the precision policy allows.

The peak is a large torch matmul (cuBLAS), timed here, not a data sheet's figure: it is what this
GPU, at its clocks and power limit, does with the library's best kernel. It costs 0.15-0.25 s of
the GPU held alone (most of it loading cuBLAS's kernel for the math), so a resident trusted
process measures it once per math and keeps it (``PeakFlops`` lives as long as the process), and
the pool hands what any of its trusted processes measured to every later job (``ChildJob.peaks``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from adaexplore_mcp.judge.policy import Precision

# 2 * 8192**3 = 1.1e12 FLOPs: long enough (over a millisecond at a PFLOP/s) that launch costs
# vanish, and a few hundred MB at most.
_SIDE = 8192
_RUNS = 3
_MEASURED = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def tensor_bytes(values: Any) -> int:
    """Bytes of the tensors in ``values`` (nested lists and tuples too), as laid out: a view
    counts its elements, not the storage behind it."""
    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, list | tuple):
        return sum(tensor_bytes(value) for value in values)
    return 0


def peak_math(values: list[Any], precision: Precision) -> tuple[torch.dtype, bool]:
    """The matmul a kernel for these inputs and outputs may use at best: the floating dtype that
    holds most of their bytes (float32 where none does), and whether TF32 is allowed (for
    float32 under ``tf32`` and ``legacy``, whose tolerances accept it; never under ``strict``)."""
    by_dtype: dict[torch.dtype, int] = {}
    for tensor in _tensors(values):
        if tensor.dtype in _MEASURED:
            by_dtype[tensor.dtype] = by_dtype.get(tensor.dtype, 0) + tensor_bytes(tensor)
    dtype = max(by_dtype, key=lambda d: by_dtype[d]) if by_dtype else torch.float32
    return dtype, dtype == torch.float32 and precision is not Precision.STRICT


def describe_math(dtype: torch.dtype, tf32: bool) -> str:
    name = str(dtype).removeprefix("torch.")
    return f"{name} matmul, TF32" if tf32 else f"{name} matmul"


class PeakFlops:
    """FLOP/s of a large matmul on this process's GPU, per math, measured on first use."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._measured: dict[tuple[torch.dtype, bool], float | None] = {}

    def __call__(
        self, dtype: torch.dtype, tf32: bool, known: Mapping[str, float] | None = None
    ) -> float | None:
        """None where the GPU had no memory to spare for the measurement. ``known``: peaks by
        math (``describe_math``) that the pool has seen measured on this GPU, used as they are
        (``ChildJob.peaks``)."""
        if known and (math_name := describe_math(dtype, tf32)) in known:
            return known[math_name]
        key = (dtype, tf32)
        if key not in self._measured:
            self._measured[key] = self._measure(dtype, tf32)
        return self._measured[key]

    def _measure(self, dtype: torch.dtype, tf32: bool) -> float | None:
        matmul = torch.backends.cuda.matmul
        allowed = matmul.allow_tf32
        try:
            matmul.allow_tf32 = tf32
            return 2 * _SIDE**3 / _best_matmul_s(self.device, dtype)
        except torch.OutOfMemoryError:
            return None
        finally:
            matmul.allow_tf32 = allowed
            torch.cuda.empty_cache()  # the operands go back to the GPU, not into this cache


def _best_matmul_s(device: torch.device, dtype: torch.dtype) -> float:
    a = torch.randn(_SIDE, _SIDE, device=device).to(dtype)
    b = torch.randn(_SIDE, _SIDE, device=device).to(dtype)
    out = torch.mm(a, b)  # loads cuBLAS's kernel outside the clock
    best_s = math.inf
    for _ in range(_RUNS):
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        torch.mm(a, b, out=out)
        end.record()
        end.synchronize()
        best_s = min(best_s, start.elapsed_time(end) / 1e3)
    return best_s


def _tensors(values: Any) -> list[torch.Tensor]:
    if isinstance(values, torch.Tensor):
        return [values]
    if isinstance(values, list | tuple):
        return [tensor for value in values for tensor in _tensors(value)]
    return []
