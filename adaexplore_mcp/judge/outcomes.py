"""Turning how a job ended (as its worker saw it) into the judge's answer."""

from __future__ import annotations

from pydantic import ValidationError

from adaexplore_mcp.judge import messages
from adaexplore_mcp.judge.exceptions import JudgeError
from adaexplore_mcp.judge.result import ErrorDetail, EvalResult, Phase, Status, kernel_hash
from adaexplore_mcp.judge.wire.jobs import ChildOutcome
from adaexplore_mcp.tasks import Task, TaskError


def report_body(
    outcome: ChildOutcome, expected_kind: str, task: Task | None, timeout_s: float | None = None
) -> dict:
    """The trusted process's report of the expected kind; raises for a task failure or a job
    that ended without one (``timeout_s``: the job's limit, for a task that ran past it)."""
    if outcome.end == "timeout" and outcome.task_running and task is not None and timeout_s:
        # the task's own code held the job past its limit: a lint of a task that hung said
        # only that the job "ended with timeout (signal None, exit code None)"
        raise TaskError(messages.task_timed_out(task.name, timeout_s), path=task.path)
    report = outcome.report or {}
    kind = report.get("kind")
    if kind == "task_error":
        message = report["body"]["message"]
        if outcome.task_output_tail:
            message += f"\nThe task printed:\n{outcome.task_output_tail[-1500:]}"
        raise TaskError(message, path=task.path if task else None)
    if kind != expected_kind:
        tail = f"\n{outcome.judge_output_tail}" if outcome.judge_output_tail else ""
        raise JudgeError(
            f"the judge's {expected_kind} job ended with {outcome.end} "
            f"(signal {outcome.signal}, exit code {outcome.exit_code}) in phase "
            f"{outcome.last_phase.value}{tail}"
        )
    return report["body"]


def eval_result(outcome: ChildOutcome, task: Task, code: str, timeout_s: float) -> EvalResult:
    if outcome.end == "timeout" and outcome.task_running:
        raise TaskError(messages.task_timed_out(task.name, timeout_s), path=task.path)
    if outcome.end == "timeout":
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
    elif outcome.end == "reported":
        result = _parsed(report_body(outcome, "eval", task))
        if result.error is not None and result.error.type == "Crash":
            _explain_crash(result, outcome)
        elif outcome.output_limit_hit and result.status is not Status.TIMEOUT:
            _over_the_output_limit(result)
    elif outcome.note:  # the worker itself was lost, and the pool says why
        detail = ErrorDetail(
            type="Crash",
            message=messages.crashed(outcome.last_phase, None, None, outcome.note),
            phase=outcome.last_phase,
        )
        result = _failure(task, code, Status.RUNTIME_ERROR, detail.message, detail)
    else:
        report_body(outcome, "eval", task)  # raises: the trusted process ended without a report
        raise AssertionError("unreachable")
    result.output_tail = outcome.output_tail
    result.phases.startup_s = outcome.startup_s
    result.phases.total_s = outcome.elapsed_s
    if outcome.sandbox is not None and result.environment is not None:
        result.environment.sandbox = outcome.sandbox
        result.environment.network_isolated = outcome.sandbox.network_isolated
    return result


def _parsed(body: dict) -> EvalResult:
    """The trusted process's report as a result; one that does not parse is the judge's fault
    (whatever a candidate sends is checked before a report is built from it)."""
    try:
        return EvalResult.model_validate(body)
    except ValidationError as exc:
        raise JudgeError(f"the trusted process sent a report that does not parse: {exc}") from None


OUTPUT_LIMIT = (
    "The kernel printed, or wrote to its working directory, more than the output limit "
    "(ADAEXPLORE_JUDGE__OUTPUT_LIMIT_MB) and was stopped; print and write less"
)


def _over_the_output_limit(result: EvalResult) -> None:
    phase = result.error.phase if result.error else Phase.CHECKING
    result.status = Status.RUNTIME_ERROR
    result.error = ErrorDetail(type="OutputLimit", message=OUTPUT_LIMIT + ".", phase=phase)
    result.message = messages.crashed(phase, None, None, OUTPUT_LIMIT)
    result.runtime = None
    result.timing_meaningful = False


def _explain_crash(result: EvalResult, outcome: ChildOutcome) -> None:
    """The candidate's process ended under the trusted process: say how, as its parent saw it."""
    assert result.error is not None
    phase = result.error.phase
    exit_info = outcome.candidate_exit
    note = None
    if outcome.output_limit_hit:
        note = OUTPUT_LIMIT
    signal = exit_info.signal if exit_info else None
    exit_code = exit_info.exit_code if exit_info else None
    result.error.signal = signal
    result.error.exit_code = exit_code
    result.error.message = messages.crashed(phase, signal, exit_code, note)
    result.message = result.error.message


def _failure(task: Task, code: str, status: Status, message: str, error: ErrorDetail) -> EvalResult:
    return EvalResult(
        status=status,
        message=message,
        task=task.name,
        task_hash=task.hash,
        kernel_hash=kernel_hash(code),
        error=error,
    )
