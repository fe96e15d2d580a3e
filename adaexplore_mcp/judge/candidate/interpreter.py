"""Triton's CPU interpreter, made to round like a GPU where a verdict depends on it.

On a GPU, ``tl.dot`` on float32 operands computes in TF32 unless ``input_precision`` (or
``TRITON_F32_DEFAULT``) says otherwise: Triton hands the float32 registers to the tensor
cores, which ignore the low 13 bits of each mantissa. The interpreter multiplies in float32
whatever the precision, so a kernel that left the default passed the strict policy on the
CPU and failed it on the GPU. ``emulate_tf32_dots`` makes the interpreter drop those bits too.

This only makes the CPU's verdict on an honest kernel match the GPU's; it is no boundary (the
candidate's process could undo it, and would only judge itself more leniently on the CPU)."""

from __future__ import annotations

from typing import Any

import numpy as np

from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

_TF32_MASK = np.uint32(0xFFFFE000)  # sign, exponent and the 10 mantissa bits TF32 keeps


def tf32_truncated(values: np.ndarray) -> np.ndarray:
    """Float32 ``values`` with the mantissa bits TF32 lacks cleared (NaNs kept NaN)."""
    truncated = (values.view(np.uint32) & _TF32_MASK).view(np.float32)
    return np.where(np.isnan(values), values, truncated)


def emulate_tf32_dots() -> None:
    """Make the interpreter's ``tl.dot`` truncate float32 operands to TF32 where the
    precision is TF32 (``tf32x3`` and ``ieee`` stay float32, as on a GPU)."""
    from triton.runtime import interpreter

    builder: Any = interpreter.InterpreterBuilder
    original = builder.create_dot
    if getattr(original, "emulates_tf32", False):
        return

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if getattr(input_precision, "name", None) == "TF32":
            a, b = (_as_tf32(operand) for operand in (a, b))
        return original(self, a, b, d, input_precision, max_num_imprecise_acc)

    create_dot.emulates_tf32 = True  # type: ignore[attr-defined]
    builder.create_dot = create_dot


def _as_tf32(operand: Any) -> Any:
    if operand.data.dtype != np.float32:
        return operand
    return type(operand)(tf32_truncated(operand.data), operand.dtype)
