"""Run statistics: correctness, speedups and fast_p per task and over a run, with bootstrap
confidence intervals (definitions and formulas in docs/report.md).

Every task the run was given counts in every rate's denominator: a task whose search found no
correct kernel (``incorrect``) and a task with no summary (``missing``: unfinished or never
started) count as failures and are listed by name, so a crashed task cannot raise a rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.rundir import RunData, RunDirError, TaskRun

FAST_P: tuple[float, ...] = (0.0, 1.0, 1.2, 2.0)
Baseline = Literal["eager", "compile"]


class Bootstrap(BaseModel):
    """Percentile bootstrap over tasks: resample with replacement, recompute, take quantiles."""

    resamples: int = Field(default=10_000, ge=100)
    confidence: float = Field(default=0.95, gt=0, lt=1)
    seed: int = 0


class Interval(BaseModel):
    low: float
    high: float


class Estimate(BaseModel):
    value: float | None = Field(description="None when no task gives the statistic a value.")
    ci: Interval | None = Field(description="Bootstrap interval; None for fewer than 2 values.")
    n: int = Field(description="Values the statistic is computed over.")


class SpeedupStats(BaseModel):
    """Speedups of the best kernels over one baseline."""

    baseline: Baseline
    n: int = Field(description="Correct tasks with a measured speedup over this baseline.")
    mean: Estimate
    median: Estimate
    geomean: Estimate
    fast_p: dict[str, Estimate] = Field(
        description="p -> share of ALL tasks that are correct with speedup > p (fast_0: correct)."
    )


class TaskStats(BaseModel):
    task: str
    status: Literal["correct", "incorrect", "missing"]
    steps: int = Field(description="Steps recorded in events.jsonl.")
    correct_steps: int
    step_correct_rate: float | None = Field(description="correct_steps / steps.")
    speedup_eager: float | None = Field(description="The best kernel's; None unless measured.")
    speedup_compile: float | None
    best_runtime_ms: float | None
    step_speedup_eager: Estimate = Field(
        description="Geometric mean over the task's correct steps with a measured speedup."
    )
    timing_meaningful: bool
    remeasured: bool
    device_name: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float | None


class RunInfo(BaseModel):
    path: str
    strategy: str
    memory: str
    model: str
    steps: int = Field(description="Steps per task.")
    replay: bool


class RunStats(BaseModel):
    runs: list[RunInfo]
    precision: Precision = Field(description="One policy: runs under different ones never mix.")
    legacy: bool = Field(description="Judged under the legacy tolerance: not comparable.")
    ops: Ops = Field(
        default=Ops.TRITON, description="One operator policy too: triton and mixed never mix."
    )
    tasks_total: int
    correct: int
    correctness: Estimate = Field(description="Share of all tasks with a correct kernel.")
    incorrect_tasks: list[str] = Field(description="Finished without a correct kernel.")
    missing_tasks: list[str] = Field(description="No summary: unfinished or never started.")
    unmeasured_tasks: list[str] = Field(
        description="Correct, but without a meaningful timing: in fast_0 only."
    )
    timing: Literal["measured", "partial", "not_meaningful"]
    note: str | None = Field(description="What the numbers cannot say, when something is off.")
    eager: SpeedupStats | None = Field(description="None when no speedup was measured at all.")
    compile: SpeedupStats | None
    devices: list[str]
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    bootstrap: Bootstrap
    tasks: list[TaskStats]


def run_stats(runs: Sequence[RunData], bootstrap: Bootstrap | None = None) -> RunStats:
    """The statistics of one run, or of several runs pooled as one set of tasks (same precision
    policy, no task in two of them)."""
    if not runs:
        raise RunDirError("no run directory given")
    bootstrap = bootstrap or Bootstrap()
    policies = {run.precision for run in runs}
    if len(policies) > 1:
        listing = ", ".join(f"{run.path} ({run.precision.value})" for run in runs)
        raise RunDirError(
            "these runs were judged under different precision policies and their results never "
            f"mix: {listing}; run stats on the runs of one policy at a time"
        )
    operator_policies = {run.ops for run in runs}
    if len(operator_policies) > 1:
        listing = ", ".join(f"{run.path} (ops {run.ops.value})" for run in runs)
        raise RunDirError(
            "these runs were judged under different operator policies and their results never "
            f"mix: {listing}; run stats on the runs of one policy at a time"
        )
    seen: dict[str, str] = {}
    for run in runs:
        for task in run.tasks:
            if task.name in seen:
                raise RunDirError(
                    f"task {task.name!r} is in both {seen[task.name]} and {run.path}; pooled runs "
                    "must hold different tasks (run stats on each run separately)"
                )
            seen[task.name] = str(run.path)
    tasks = [task_stats(task) for run in runs for task in run.tasks]
    rng = np.random.default_rng(bootstrap.seed)
    correct = [t for t in tasks if t.status == "correct"]
    measured = [t for t in correct if t.speedup_eager is not None]
    unmeasured = [t.task for t in correct if t.speedup_eager is None]
    timing: Literal["measured", "partial", "not_meaningful"] = (
        "measured" if not unmeasured else ("partial" if measured else "not_meaningful")
    )
    policy = policies.pop()
    operators = operator_policies.pop()
    return RunStats(
        runs=[_run_info(run) for run in runs],
        precision=policy,
        legacy=policy is Precision.LEGACY,
        ops=operators,
        tasks_total=len(tasks),
        correct=len(correct),
        correctness=_estimate([t.status == "correct" for t in tasks], _mean, bootstrap, rng),
        incorrect_tasks=[t.task for t in tasks if t.status == "incorrect"],
        missing_tasks=[t.task for t in tasks if t.status == "missing"],
        unmeasured_tasks=unmeasured,
        timing=timing,
        note=_note(timing, policy, operators, unmeasured),
        eager=_speedups(tasks, "eager", bootstrap, rng) if measured else None,
        compile=_speedups(tasks, "compile", bootstrap, rng) if measured else None,
        devices=sorted({t.device_name for t in tasks if t.device_name}),
        input_tokens=sum(t.input_tokens for t in tasks),
        output_tokens=sum(t.output_tokens for t in tasks),
        cost_usd=_sum_or_none([t.cost_usd for t in tasks]),
        bootstrap=bootstrap,
        tasks=tasks,
    )


def task_stats(task: TaskRun) -> TaskStats:
    summary = task.summary
    steps = len(task.events)
    correct_steps = sum(1 for e in task.events if e.outcome == "correct")
    step_speedups = [
        e.speedup_eager for e in task.events if e.outcome == "correct" and e.speedup_eager
    ]
    timed = (
        summary if summary is not None and summary.correct and summary.timing_meaningful else None
    )
    status: Literal["correct", "incorrect", "missing"] = (
        "missing" if summary is None else ("correct" if summary.correct else "incorrect")
    )
    return TaskStats(
        task=task.name,
        status=status,
        steps=steps,
        correct_steps=correct_steps,
        step_correct_rate=correct_steps / steps if steps else None,
        speedup_eager=_positive(timed.speedup_eager) if timed is not None else None,
        speedup_compile=_positive(timed.speedup_compile) if timed is not None else None,
        best_runtime_ms=summary.best_runtime_ms if summary else None,
        step_speedup_eager=Estimate(value=geomean(step_speedups), ci=None, n=len(step_speedups)),
        timing_meaningful=bool(summary and summary.timing_meaningful),
        remeasured=bool(summary and summary.remeasured),
        device_name=summary.device_name if summary else None,
        input_tokens=summary.input_tokens if summary else sum(e.input_tokens for e in task.events),
        output_tokens=summary.output_tokens
        if summary
        else sum(e.output_tokens for e in task.events),
        cost_usd=summary.cost_usd if summary else _sum_or_none([e.cost_usd for e in task.events]),
    )


def geomean(values: Sequence[float]) -> float | None:
    """exp(mean(ln v)) over positive values; None for none."""
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def fast_p(tasks: Sequence[TaskStats], p: float, baseline: Baseline = "eager") -> float:
    """Share of ALL tasks that are correct and, for p > 0, faster than p times the baseline."""
    return float(np.mean(_fast_indicators(tasks, p, baseline))) if tasks else 0.0


def bootstrap_interval(
    values: Sequence[float],
    statistic: Callable[[np.ndarray], np.ndarray],
    bootstrap: Bootstrap,
    rng: np.random.Generator,
) -> Interval | None:
    """The percentile interval of ``statistic`` (applied along axis 1 of the resampled rows)."""
    if len(values) < 2:
        return None
    data = np.asarray(values, dtype=float)
    rows = rng.integers(0, len(data), size=(bootstrap.resamples, len(data)))
    replicates = statistic(data[rows])
    tail = (1 - bootstrap.confidence) / 2
    low, high = np.quantile(replicates, [tail, 1 - tail])
    return Interval(low=float(low), high=float(high))


# -- internals ---------------------------------------------------------------------------------


def _mean(rows: np.ndarray) -> np.ndarray:
    return rows.mean(axis=-1)


def _median(rows: np.ndarray) -> np.ndarray:
    return np.median(rows, axis=-1)


def _geomean(rows: np.ndarray) -> np.ndarray:
    return np.exp(np.log(rows).mean(axis=-1))


def _estimate(
    values: Sequence[float],
    statistic: Callable[[np.ndarray], np.ndarray],
    bootstrap: Bootstrap,
    rng: np.random.Generator,
) -> Estimate:
    if not values:
        return Estimate(value=None, ci=None, n=0)
    point = float(statistic(np.asarray(values, dtype=float)))
    return Estimate(
        value=point, ci=bootstrap_interval(values, statistic, bootstrap, rng), n=len(values)
    )


def _speedups(
    tasks: list[TaskStats], baseline: Baseline, bootstrap: Bootstrap, rng: np.random.Generator
) -> SpeedupStats:
    values = [s for t in tasks if (s := _speedup(t, baseline)) is not None]
    return SpeedupStats(
        baseline=baseline,
        n=len(values),
        mean=_estimate(values, _mean, bootstrap, rng),
        median=_estimate(values, _median, bootstrap, rng),
        geomean=_estimate(values, _geomean, bootstrap, rng),
        fast_p={
            _p_key(p): _estimate(_fast_indicators(tasks, p, baseline), _mean, bootstrap, rng)
            for p in FAST_P
        },
    )


def _fast_indicators(tasks: Sequence[TaskStats], p: float, baseline: Baseline) -> list[float]:
    if p <= 0:
        return [float(t.status == "correct") for t in tasks]
    return [float((s := _speedup(t, baseline)) is not None and s > p) for t in tasks]


def _speedup(task: TaskStats, baseline: Baseline) -> float | None:
    if task.status != "correct":
        return None
    return task.speedup_eager if baseline == "eager" else task.speedup_compile


def _p_key(p: float) -> str:
    return f"{p:g}"


def _positive(value: float | None) -> float | None:
    return value if value is not None and value > 0 and math.isfinite(value) else None


def _sum_or_none(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _run_info(run: RunData) -> RunInfo:
    config = run.config
    return RunInfo(
        path=str(run.path),
        strategy=config.strategy,
        memory=config.memory,
        model=config.model,
        steps=config.steps,
        replay=config.replay,
    )


def _note(timing: str, policy: Precision, operators: Ops, unmeasured: list[str]) -> str | None:
    notes = []
    if timing == "not_meaningful":
        notes.append(
            "speedups are unavailable: no correct kernel has a meaningful timing (a CPU run, "
            "Triton's interpreter); the rates count correctness only"
        )
    elif timing == "partial":
        notes.append(
            f"{len(unmeasured)} correct task(s) have no meaningful timing and count in fast_0 "
            "only: " + ", ".join(unmeasured)
        )
    if policy is Precision.LEGACY:
        notes.append(
            "judged under the LEGACY precision policy (atol = rtol = 5e-2): these numbers are "
            "not comparable with strict or tf32 runs"
        )
    if operators is Ops.MIXED:
        notes.append(
            "judged under the MIXED operator policy (torch's library operators allowed beside "
            "Triton kernels): these numbers are not comparable with triton-only runs"
        )
    return "; ".join(notes) or None
