"""Re-measuring a run's best kernels on the current GPU, with more timing runs than a search
spends on each step, and updating the run's summaries.

The figures a summary held before are never lost: each task's ``reeval.json`` keeps every
re-evaluation with the summary it replaced. A kernel that is not correct on every repeat is
recorded as such and the task stops counting as correct: the statistics must not rest on a
kernel that fails on fresh inputs.
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from collections.abc import Callable
from typing import Literal, TypedDict

from pydantic import BaseModel, Field

from adaexplore_mcp.judge import EvalResult, Judge, JudgeError
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.rundir import RunData, TaskRun, TaskRunSummary, write_json
from adaexplore_mcp.tasks import Task, TaskError, task_from_source

log = logging.getLogger(__name__)


class TaskReeval(BaseModel):
    """One task's re-evaluation, as appended to its ``reeval.json``."""

    task: str
    outcome: Literal["remeasured", "checked", "failed", "skipped", "error"] = Field(
        description="remeasured: timed on a GPU; checked: correctness only (CPU); failed: a "
        "repeat was not correct; skipped: no best kernel; error: the judge could not run it."
    )
    reason: str | None = None
    precision: Precision
    ops: Ops = Ops.TRITON
    device: str | None = None
    device_name: str | None = None
    repeats: int = 0
    verdicts: list[str] = Field(default_factory=list)
    samples_ms: list[float] = Field(
        default_factory=list, description="Each repeat's median runtime."
    )
    runtime_ms: float | None = Field(default=None, description="Median of samples_ms.")
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    timing_runs: int | None = Field(default=None, description="Timed calls per repeat (last).")
    previous: TaskRunSummary | None = Field(description="The summary this re-evaluation replaced.")
    at: float


class _Identity(TypedDict):
    """The fields every outcome of one task's re-evaluation shares."""

    task: str
    precision: Precision
    ops: Ops
    previous: TaskRunSummary | None
    at: float


class _Where(TypedDict):
    """Where and how often a kernel that ran was judged."""

    device: str | None
    device_name: str | None
    repeats: int
    verdicts: list[str]


class ReevalReport(BaseModel):
    run: str
    precision: Precision
    ops: Ops = Ops.TRITON
    devices: list[str]
    tasks: list[TaskReeval]


async def reeval_run(
    run: RunData,
    judge: Judge,
    *,
    repeats: int = 3,
    device: str | None = None,
    tasks: list[str] | None = None,
    on_task: Callable[[TaskReeval], None] | None = None,
) -> ReevalReport:
    """Re-evaluates every task's best kernel ``repeats`` times under the run's policies
    (on ``judge``, whose timing settings decide how long each measurement is), updates each
    ``summary.json`` and appends to each ``reeval.json``."""
    results = []
    for task_run in run.tasks:
        if tasks is not None and task_run.name not in tasks:
            continue
        result = await _reeval_task(run, task_run, judge, repeats, device)
        if result.outcome in ("remeasured", "checked", "failed"):
            _record(task_run, result)
        results.append(result)
        if on_task is not None:
            on_task(result)
    return ReevalReport(
        run=str(run.path),
        precision=run.precision,
        ops=run.ops,
        devices=judge.devices,
        tasks=results,
    )


def history(task_run: TaskRun) -> list[TaskReeval]:
    """Every earlier re-evaluation of a task, oldest first."""
    path = task_run.paths.reeval
    if not path.is_file():
        return []
    return [TaskReeval.model_validate(item) for item in json.loads(path.read_text())]


async def _reeval_task(
    run: RunData, task_run: TaskRun, judge: Judge, repeats: int, device: str | None
) -> TaskReeval:
    now = time.time()
    summary = task_run.summary
    base = _Identity(
        task=task_run.name, precision=run.precision, ops=run.ops, previous=summary, at=now
    )
    code = task_run.best_kernel()
    if summary is None or not summary.correct or code is None:
        return TaskReeval(outcome="skipped", reason="no correct best kernel", **base)
    try:
        task = _task(task_run)
    except TaskError as exc:
        return TaskReeval(outcome="error", reason=f"the task's source: {exc}", **base)
    verdicts: list[EvalResult] = []
    try:
        for _ in range(repeats):
            verdict = await judge.evaluate(
                task, code, device=device, precision=run.precision, ops=run.ops
            )
            verdicts.append(verdict)
            if not verdict.ok:  # one failure settles it; no need to spend the GPU on more
                break
    except JudgeError as exc:
        return TaskReeval(outcome="error", reason=f"the judge could not run: {exc}", **base)
    return _outcome(verdicts, base)


def _outcome(verdicts: list[EvalResult], base: _Identity) -> TaskReeval:
    last = verdicts[-1]
    environment = last.environment
    where = _Where(
        device=environment.device if environment else None,
        device_name=environment.device_name if environment else None,
        repeats=len(verdicts),
        verdicts=[v.status.value for v in verdicts],
    )
    bad = next((v for v in verdicts if not v.ok), None)
    if bad is not None:
        return TaskReeval(outcome="failed", reason=bad.message, **where, **base)
    timed = [v.runtime for v in verdicts if v.timing_meaningful and v.runtime is not None]
    if len(timed) < len(verdicts):
        return TaskReeval(
            outcome="checked",
            reason="correct on every repeat; timing is not meaningful on this device",
            **where,
            **base,
        )
    samples = [runtime.median_ms for runtime in timed]
    runtime = statistics.median(samples)
    eager = last.eager.median_ms if last.eager else None
    compiled = last.compiled.median_ms if last.compiled else None
    return TaskReeval(
        outcome="remeasured",
        samples_ms=samples,
        runtime_ms=runtime,
        eager_ms=eager,
        compile_ms=compiled,
        speedup_eager=eager / runtime if eager else None,
        speedup_compile=compiled / runtime if compiled else None,
        timing_runs=last.runtime.n if last.runtime else None,
        **where,
        **base,
    )


def _record(task_run: TaskRun, result: TaskReeval) -> None:
    """Appends to reeval.json first, then updates summary.json: a crash in between leaves the
    old summary and a history that says what was measured."""
    entries = [item.model_dump(mode="json") for item in history(task_run)]
    entries.append(result.model_dump(mode="json"))
    write_json(task_run.paths.reeval, entries)
    summary = task_run.summary
    assert summary is not None
    if result.outcome == "failed":
        updated = summary.model_copy(update={"correct": False})
    elif result.outcome == "remeasured":
        updated = summary.model_copy(
            update={
                "best_runtime_ms": result.runtime_ms,
                "speedup_eager": result.speedup_eager,
                "speedup_compile": result.speedup_compile,
                "eager_ms": result.eager_ms,
                "compile_ms": result.compile_ms,
                "timing_meaningful": True,
                "device_name": result.device_name,
                "remeasured": True,
            }
        )
    else:  # correctness re-checked on the CPU: the timings it had (if any) stay as they were
        return
    write_json(task_run.paths.summary, updated)
    task_run.summary = updated


def _task(task_run: TaskRun) -> Task:
    record = task_run.record
    if record is None:
        raise TaskError(f"{task_run.paths.record} is missing")
    task = task_from_source(record.source, record.name)
    if task.hash != record.hash:
        # the source is the one the run judged; a different hash means a changed task format
        log.warning("task %s: hash %s differs from the run's %s", task.name, task.hash, record.hash)
    return task
