"""Turning what a worker saw of a child into the judge's answer."""

from __future__ import annotations

from adaexplore_mcp.judge import messages
from adaexplore_mcp.judge.protocol import ChildOutcome
from adaexplore_mcp.judge.result import ErrorDetail, EvalResult, Status, kernel_hash
from adaexplore_mcp.tasks import Task, TaskError


class JudgeError(RuntimeError):
    """The judge itself could not produce a verdict (not the candidate's fault)."""


def report_body(outcome: ChildOutcome, expected_kind: str, task: Task | None) -> dict:
    """The child's report of the expected kind; raises for a task failure or a lost report."""
    report = outcome.report or {}
    kind = report.get("kind")
    if kind == "task_error":
        raise TaskError(report["body"]["message"], path=task.path if task else None)
    if kind != expected_kind:
        tail = f"\n{outcome.output_tail}" if outcome.output_tail else ""
        raise JudgeError(
            f"the judge's {expected_kind} job ended with {outcome.end} "
            f"(signal {outcome.signal}, exit code {outcome.exit_code}) in phase "
            f"{outcome.last_phase.value}{tail}"
        )
    return report["body"]


def eval_result(outcome: ChildOutcome, task: Task, code: str, timeout_s: float) -> EvalResult:
    if outcome.end == "reported":
        result = EvalResult.model_validate(report_body(outcome, "eval", task))
    elif outcome.end == "timeout":
        result = _failure(
            task,
            code,
            Status.TIMEOUT,
            messages.timed_out(outcome.last_phase, timeout_s),
            ErrorDetail(
                type="Timeout",
                message=f"no result within {timeout_s:g} s",
                phase=outcome.last_phase,
            ),
        )
    else:
        detail = ErrorDetail(
            type="Crash",
            message=messages.crashed(
                outcome.last_phase, outcome.signal, outcome.exit_code, outcome.note
            ),
            phase=outcome.last_phase,
            signal=outcome.signal,
            exit_code=outcome.exit_code,
        )
        result = _failure(task, code, Status.RUNTIME_ERROR, detail.message, detail)
    result.output_tail = outcome.output_tail
    result.phases.startup_s = outcome.startup_s
    result.phases.total_s = outcome.elapsed_s
    return result


def _failure(task: Task, code: str, status: Status, message: str, error: ErrorDetail) -> EvalResult:
    return EvalResult(
        status=status,
        message=message,
        task=task.name,
        task_hash=task.hash,
        kernel_hash=kernel_hash(code),
        error=error,
    )
