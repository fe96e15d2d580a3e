"""Turning how an evaluation ended into its ``EvalResult``: a failure of the candidate's code,
a lost process, an integrity check's rejection, a wrong output, or a pass."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adaexplore_mcp.judge import messages
from adaexplore_mcp.judge.checks import Violation
from adaexplore_mcp.judge.errors import classify, detail_of
from adaexplore_mcp.judge.result import (
    Environment,
    ErrorDetail,
    EvalResult,
    IntegrityFlag,
    Mismatch,
    Phase,
    Status,
    kernel_hash,
)
from adaexplore_mcp.judge.trusted import weights
from adaexplore_mcp.judge.trusted.common import EarlyVerdict
from adaexplore_mcp.judge.trusted.link import SubjectLost
from adaexplore_mcp.judge.wire.jobs import ChildJob
from adaexplore_mcp.judge.wire.subject import ReadyAnswer, SubjectError

if TYPE_CHECKING:
    from adaexplore_mcp.judge.trusted.evaluation import TrustedEvaluation


def result(
    evaluation: TrustedEvaluation, status: Status, message: str, **fields: Any
) -> EvalResult:
    """The result with everything the evaluation has established so far."""
    return EvalResult(
        status=status,
        message=messages.clipped(message),
        task=evaluation.task.name,
        task_hash=evaluation.task.hash,
        kernel_hash=kernel_hash(evaluation.job.code or ""),
        correctness=evaluation.correctness,
        timing_meaningful=evaluation.device_kind == "cuda" and fields.get("runtime") is not None,
        environment=evaluation.environment,
        work=evaluation.work,
        phases=evaluation.phases,
        **fields,
    )


def failed(
    evaluation: TrustedEvaluation,
    error: SubjectError,
    phase: Phase,
    *,
    loading: bool,
    variant: str | None = None,
) -> EarlyVerdict:
    """The candidate's code raised (or would not load) in ``phase``, on ``variant``."""
    status = classify(error, loading=loading)
    detail = detail_of(error, phase)
    detail.variant = variant
    return EarlyVerdict(
        result(evaluation, status, messages.error(status, detail, phase), error=detail)
    )


def lost(evaluation: TrustedEvaluation, gone: SubjectLost) -> EvalResult:
    """The candidate's process died or broke the protocol: a runtime error of the kernel."""
    phase = evaluation.reporter.phase_now or Phase.COMPILING
    if gone.oversized:
        text = messages.answer_too_large(phase, gone.why)
        detail = ErrorDetail(type="AnswerTooLarge", message=text, phase=phase)
        return result(evaluation, Status.RUNTIME_ERROR, text, error=detail)
    if gone.garbled:
        text = messages.garbled(phase, gone.why)
        detail = ErrorDetail(type="ProtocolError", message=text, phase=phase)
        return result(evaluation, Status.RUNTIME_ERROR, text, error=detail)
    detail = ErrorDetail(type="Crash", message=f"the kernel's process {gone.why}", phase=phase)
    text = messages.crashed(phase, None, None)
    return result(evaluation, Status.RUNTIME_ERROR, text, error=detail)


def stuck(evaluation: TrustedEvaluation) -> EarlyVerdict:
    """A timed call never finished."""
    text = messages.never_finished()
    detail = ErrorDetail(type="Stuck", message=text, phase=Phase.TIMING)
    return EarlyVerdict(result(evaluation, Status.RUNTIME_ERROR, text, error=detail))


def kept_busy(evaluation: TrustedEvaluation, limit_ms: float) -> EarlyVerdict:
    """Work the kernel's process left on the GPU outlived its timed calls."""
    text = messages.kept_busy(limit_ms)
    detail = ErrorDetail(type="KeptBusy", message=text, phase=Phase.TIMING)
    return EarlyVerdict(result(evaluation, Status.RUNTIME_ERROR, text, error=detail))


def rejected(evaluation: TrustedEvaluation, violation: Violation) -> EvalResult:
    flag = IntegrityFlag(check=violation.check.value, detail=violation.detail)
    stop = "" if violation.detail.endswith(".") else "."
    message = f"Rejected by the {violation.check.value} check: {violation.detail}{stop}"
    return result(evaluation, Status.REJECTED, message, integrity=[flag])


def incorrect(evaluation: TrustedEvaluation, mismatch: Mismatch) -> EarlyVerdict:
    evaluation.correctness.mismatch = mismatch
    text = messages.incorrect(mismatch)
    if mismatch.kind != "input_modified":  # other weights explain wrong outputs, not this
        text += weights.hint(*evaluation.weights.get(mismatch.variant, (None, None)))
    return EarlyVerdict(result(evaluation, Status.INCORRECT, text))


def environment_of(job: ChildJob, platform: ReadyAnswer) -> Environment:
    """``platform``: the trusted process's own description (``describe_platform``), never the
    one the candidate's process sends, which it could rewrite."""
    return Environment(
        device=job.device,
        device_name=platform.device_name or "unknown",
        capability=platform.capability,
        interpreter=job.device == "cpu",
        torch=platform.torch,
        triton=platform.triton,
        python=platform.python,
    )
