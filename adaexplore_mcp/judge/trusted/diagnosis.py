"""When a kernel's values are wrong by about what rounding produces: the same output's error on
the task's other shapes, for the message (rounding error grows with the reduction length, a
logic error usually does not). A diagnosis only: it never changes the verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from adaexplore_mcp.judge import messages
from adaexplore_mcp.judge.checks import Violation
from adaexplore_mcp.judge.result import Mismatch, Phase, ShapeError
from adaexplore_mcp.judge.trusted import checked_calls
from adaexplore_mcp.judge.trusted.common import EarlyVerdict
from adaexplore_mcp.judge.trusted.link import SubjectFailed, SubjectLost
from adaexplore_mcp.judge.trusted.report import TaskFailed
from adaexplore_mcp.tasks import VariantRole

if TYPE_CHECKING:
    from adaexplore_mcp.judge.trusted.evaluation import TrustedEvaluation


def diagnose_rounding(evaluation: TrustedEvaluation, mismatch: Mismatch) -> None:
    """For wrong values of the size rounding produces: the same output's error on the
    task's other shapes. Rounding error grows with the reduction length, a logic error
    usually does not; the message reports which it is. Never changes the verdict."""
    if not messages.rounding_sized(mismatch):
        return
    errors = [ShapeError(shape=mismatch.variant, inputs=0, rel_l2_error=mismatch.rel_l2_error)]
    try:
        for variant in evaluation.task.variants_for(evaluation.device_kind):
            built = variant.name in evaluation.parameter_bytes
            if variant.role is VariantRole.DERIVED and not built:
                continue  # the reference may not run it; only shapes already checked
            key, master = evaluation.exchange.inputs(variant)
            if variant.describe() == mismatch.variant:
                errors[0].inputs = _numel(master)
                evaluation.exchange.forget(key)
                continue
            if not built:
                checked_calls.build(evaluation, variant, None)
            outputs, _, _, _ = checked_calls.call(
                evaluation, variant, master, "check", Phase.CHECKING, False
            )
            expected, _ = evaluation.exchange.reference(key)
            actual, want = outputs[mismatch.output_index], expected[mismatch.output_index]
            if not _comparable(actual, want):
                continue  # whatever the kernel returned there, it is no error of this output's
            norm = float(want.double().norm())
            if norm:
                error = float((actual.double() - want.double()).norm()) / norm
                errors.append(
                    ShapeError(shape=variant.describe(), inputs=_numel(master), rel_l2_error=error)
                )
    except (
        EarlyVerdict,
        Violation,
        SubjectLost,
        SubjectFailed,
        TaskFailed,
        IndexError,
        RuntimeError,
    ):
        return  # a diagnosis only: whatever the kernel does here, the verdict stands
    mismatch.errors_by_shape = sorted(errors, key=lambda e: e.inputs)


def _comparable(actual: object, want: object) -> bool:
    """Both tensors of one shape: what the diagnosis measures an error between (the kernel's
    answer here is not checked otherwise, and a diagnosis never changes the verdict)."""
    return (
        isinstance(actual, torch.Tensor)
        and isinstance(want, torch.Tensor)
        and actual.shape == want.shape
        and not actual.is_complex()
        and not want.is_complex()
    )


def _numel(values: list) -> int:
    return sum(v.numel() for v in values if isinstance(v, torch.Tensor))
