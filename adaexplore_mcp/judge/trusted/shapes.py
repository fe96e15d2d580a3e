"""Whether the task's own reference can run a shape the judge derived from the task's sizes
(``tasks/derived.py``). A task may need sizes the derivation cannot know of (a width that splits
into heads, an even length): such a variant is skipped, never held against a kernel. Only the
task's process runs the task's code; this module reads what it answers.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from adaexplore_mcp.judge.result import SkippedVariant
from adaexplore_mcp.judge.trusted.link import Link, SubjectFailed
from adaexplore_mcp.judge.wire.subject import (
    BuildAnswer,
    BuildRequest,
    ExpectedRequest,
    SetsAnswer,
    SetsRequest,
)
from adaexplore_mcp.tasks import ShapeVariant

_REASON_CHARS = 300


def probe_reference(
    link: Link, variant: ShapeVariant, build: BuildRequest, seed: int, key: int
) -> tuple[tuple[BuildAnswer, bytes] | None, SkippedVariant | None]:
    """Build ``Model`` for the variant (with ``build``, the request the evaluation would send)
    and run it once on inputs from ``seed``. Either the build's answer, to give the candidate
    the same ``get_init_inputs()``, or why the variant is skipped: what the reference raised,
    or the output that holds NaN or Inf."""
    try:
        built = link.ask(build, expect=BuildAnswer)
        sets = SetsRequest(
            variant=variant.name, overrides=dict(variant.overrides), seeds=[seed], keys=[key]
        )
        link.ask(sets, expect=SetsAnswer)
        answer, payload = link.ask(ExpectedRequest(keys=[key]), expect=SetsAnswer)
    except SubjectFailed as failure:
        error = failure.answer.error
        reason = f"the reference raised {error.type}: {error.message}"
        return None, _skipped(variant, reason)
    outputs = link.take_sets(answer.sets, payload)[0]
    for index, output in enumerate(outputs):
        if nonfinite(output):
            return None, _skipped(variant, f"the reference's output {index} holds NaN or Inf")
    return built, None


def _skipped(variant: ShapeVariant, reason: str) -> SkippedVariant:
    if len(reason) > _REASON_CHARS:
        reason = reason[: _REASON_CHARS - 1] + "…"
    return SkippedVariant(variant=variant.describe(), reason=reason)


def is_float32(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype == torch.float32


def is_float8(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point and dtype.itemsize == 1


def nothing_to_compute(expected: list[Any]) -> bool:
    """Every output the reference returns is a tensor with no element (a shape with a zero in
    it): any output is right, so neither a launch nor a no-op call tells anything."""
    return bool(expected) and all(
        isinstance(value, torch.Tensor) and value.numel() == 0 for value in expected
    )


def nonfinite(value: Any) -> bool:
    """A NaN or an infinity in a float or complex tensor, or a Python float."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if not isinstance(value, torch.Tensor) or not (value.is_floating_point() or value.is_complex()):
        return False
    if is_float8(value.dtype):
        value = value.float()  # torch has no isfinite of its own for it on the CPU
    return not bool(torch.isfinite(value).all())
