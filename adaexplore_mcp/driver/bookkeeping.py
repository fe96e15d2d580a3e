"""What a run writes beside its steps: each task's summary and best kernel, the run's usage,
the progress a display shows, and the reasoning bank's lesson of a finished task."""

from __future__ import annotations

import logging
from collections import Counter

from adaexplore_mcp.driver.progress import TaskProgress, best_label
from adaexplore_mcp.driver.steps import DrivenTask
from adaexplore_mcp.driver.tools import Tools
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.llm import LLMError, UsageTotals
from adaexplore_mcp.memory import ReasoningBank, TaskOutcome
from adaexplore_mcp.rundir import ModelUsage, RunDir, StepRecord, TaskRunSummary

log = logging.getLogger(__name__)


async def summarize(tools: Tools, run: RunDir, task: DrivenTask) -> TaskRunSummary:
    """summary.json (and best_kernel.py) of a task: the best kernel so far on the measurements
    recorded (``reeval`` re-measures), and the task's totals. Written after every step, so an
    interrupted run has them."""
    best = (await tools.best_kernel(task.search_id)).node
    result = best.result if best is not None else None
    records = task.records.values()
    costs = [r.cost_usd for r in records if r.cost_usd is not None]
    summary = TaskRunSummary(
        task=task.name,
        precision=Precision(task.precision),
        ops=Ops(task.ops),
        steps=len(task.records),
        correct=best is not None,
        best_node_id=best.id if best else None,
        best_runtime_ms=best.runtime_ms if best else None,
        speedup_eager=result.speedup_eager if result else None,
        speedup_compile=result.speedup_compile if result else None,
        eager_ms=result.eager.median_ms if result and result.eager else None,
        compile_ms=result.compiled.median_ms if result and result.compiled else None,
        timing_meaningful=bool(result and result.timing_meaningful),
        device_name=result.environment.device_name if result and result.environment else None,
        input_tokens=sum(r.input_tokens for r in records),
        output_tokens=sum(r.output_tokens for r in records),
        cost_usd=sum(costs) if costs else None,
    )
    run.write_summary(summary)
    if best is not None and best.code is not None:
        run.write_best(task.name, best.code)
    return summary


def merged_usage(before: ModelUsage, now: UsageTotals) -> ModelUsage:
    """The run's usage: what earlier sessions of a resumed run used plus this one's."""
    cost = None
    if before.cost_usd is not None or now.cost_usd is not None:
        cost = (before.cost_usd or 0.0) + (now.cost_usd or 0.0)
    return ModelUsage(
        calls=before.calls + now.calls,
        input_tokens=before.input_tokens + now.input_tokens,
        output_tokens=before.output_tokens + now.output_tokens,
        cost_usd=cost,
        failed_calls=before.failed_calls + now.failed_calls,
        retries=before.retries + now.retries,
    )


def task_progress(task: DrivenTask, steps: int, summary: TaskRunSummary | None) -> TaskProgress:
    last = task.records[max(task.records)] if task.records else None
    return TaskProgress(
        task=task.name,
        steps=steps,
        done=len(task.records),
        running=len(task.running),
        best=best_label(summary),
        last=_last(last),
        input_tokens=summary.input_tokens if summary else 0,
        output_tokens=summary.output_tokens if summary else 0,
        cost_usd=summary.cost_usd if summary else None,
    )


def _last(record: StepRecord | None) -> str | None:
    if record is None:
        return None
    return f"{record.action}: {record.outcome.replace('_', ' ')}"


def lessons_for(bank: ReasoningBank, task: DrivenTask, run: RunDir, k: int) -> list[str]:
    """The lessons of the most similar tasks, from other runs (a resumed run's own lessons are
    about the very tasks it is running)."""
    run_id = str(run.path.resolve())
    similar = bank.similar(task.task, k=k + 10)
    return [lesson.text for lesson in similar if lesson.run != run_id][:k]


async def distil_lesson(
    bank: ReasoningBank, run: RunDir, task: DrivenTask, summary: TaskRunSummary | None
) -> None:
    """The finished task's lesson, once per run and task; a model that fails costs the lesson,
    not the run."""
    run_id = str(run.path.resolve())
    if any(x.task == task.name and x.run == run_id for x in bank.lessons()):
        return
    failures = Counter(run.failures(task.name))
    outcome = TaskOutcome(
        steps=len(task.records),
        solved=bool(summary and summary.correct),
        best_speedup=summary.speedup_eager if summary else None,
        best_kernel=run.best_kernel(task.name),
        failures=[text for text, _ in failures.most_common()],
    )
    try:
        await bank.distil(task.task, outcome, run=run_id)
    except LLMError as exc:
        log.warning("no lesson for task %s: the model failed (%s)", task.name, exc)
