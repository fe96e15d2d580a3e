"""Judging a matched problem set through any judge, as many kernels at once as it can take.

``plan_set`` reads every matched problem and kernel (parsing only: nothing runs here) and sets
aside what a results file already holds under the same policies. ``judge_set`` then hands the
rest to the judge's own concurrency, every device of a local pool or a judge service, and
reports each verdict as it arrives, so the caller can record it at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from adaexplore_mcp.judge import EvalResult, Judge, JudgeError, JudgeUnavailable
from adaexplore_mcp.judge.result import kernel_hash
from adaexplore_mcp.judge.service.api import MAX_SOURCE_CHARS
from adaexplore_mcp.problem_set.matching import SetMatch, SetPair
from adaexplore_mcp.problem_set.records import Policies, SetRecord, done_under, policies_of
from adaexplore_mcp.tasks import Task, TaskError, load_task_file
from adaexplore_mcp.tasks.loader import read_source


class SetItem(BaseModel):
    """A kernel ready to judge."""

    pair: SetPair
    task: Task
    code: str
    kernel_hash: str


class NotJudged(BaseModel):
    problem: str
    kernel: str
    reason: str
    judge_failed: bool = Field(
        description="The judge could not run (rerun to retry); otherwise a file is unusable."
    )


class SetPlan(BaseModel):
    pending: list[SetItem]
    done: list[SetRecord] = Field(description="Already in the results file, same policies.")
    not_judged: list[NotJudged] = Field(description="A problem or kernel file that is unusable.")


def plan_set(
    match: SetMatch,
    problems_dir: Path,
    kernels_dir: Path,
    policies: Policies,
    recorded: list[SetRecord],
) -> SetPlan:
    done = done_under(recorded, policies)
    tasks: dict[str, Task | str] = {}
    plan = SetPlan(pending=[], done=[], not_judged=[])
    for pair in match.pairs:
        if pair.problem not in tasks:
            try:
                tasks[pair.problem] = load_task_file(problems_dir / pair.problem, level=pair.level)
            except TaskError as exc:
                tasks[pair.problem] = f"the problem file cannot be used: {exc}"
        task = tasks[pair.problem]
        try:
            code = read_source(kernels_dir / pair.kernel, MAX_SOURCE_CHARS)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            plan.not_judged.append(_not_judged(pair, f"cannot read the kernel file: {reason}"))
            continue
        if isinstance(task, str):
            plan.not_judged.append(_not_judged(pair, task))
            continue
        item = SetItem(pair=pair, task=task, code=code, kernel_hash=kernel_hash(code))
        record = done.get((pair.kernel, item.kernel_hash, task.hash))
        if record is not None and record.problem == pair.problem:
            plan.done.append(record)
        else:
            plan.pending.append(item)
    return plan


async def judge_capacity(judge: Judge) -> int:
    """Evaluations to keep in flight: every worker of every device busy, and one more waiting
    per device so that none idles between two kernels."""
    if callable(lanes := getattr(judge, "lanes_status", None)):
        statuses = lanes()
    elif callable(health := getattr(judge, "health", None)):
        statuses = (await health()).devices
    else:
        return max(2, 2 * len(judge.devices))
    return max(1, sum(status.workers + 1 for status in statuses))


async def judge_set(
    judge: Judge,
    items: list[SetItem],
    options: Mapping[str, Any],
    *,
    jobs: int,
    device: str | None = None,
    timeout_s: float | None = None,
    on_record: Callable[[SetRecord], None],
    on_not_judged: Callable[[NotJudged], None] | None = None,
) -> list[NotJudged]:
    """Judges ``items`` with at most ``jobs`` in flight; ``options`` are the policies passed to
    ``judge.evaluate`` (``precision=…``); ``device`` names one device of a judge service, None
    spreads the kernels over all of them. ``on_record`` gets each verdict as it arrives. Once
    the judge is unavailable no further kernel is started; those are returned as not judged."""
    slots = asyncio.Semaphore(max(1, jobs))
    failed: list[NotJudged] = []
    unavailable: list[str] = []

    async def one(item: SetItem) -> None:
        outcome: SetRecord | NotJudged
        async with slots:
            if unavailable:
                outcome = _not_judged(item.pair, f"not started: {unavailable[0]}", judge=True)
            else:
                outcome = await _evaluate(judge, item, options, device, timeout_s, unavailable)
        if isinstance(outcome, SetRecord):
            on_record(outcome)
            return
        failed.append(outcome)
        if on_not_judged is not None:
            on_not_judged(outcome)

    async with asyncio.TaskGroup() as group:
        for item in items:
            group.create_task(one(item))
    return failed


async def _evaluate(
    judge: Judge,
    item: SetItem,
    options: Mapping[str, Any],
    device: str | None,
    timeout_s: float | None,
    unavailable: list[str],
) -> SetRecord | NotJudged:
    try:
        result: EvalResult = await judge.evaluate(
            item.task, item.code, device=device, timeout_s=timeout_s, **options
        )
    except TaskError as exc:
        return _not_judged(item.pair, f"the judge refused the problem: {exc}")
    except JudgeUnavailable as exc:
        unavailable.append(f"the judge is unavailable ({exc})")
        return _not_judged(item.pair, f"the judge is unavailable: {exc}", judge=True)
    except JudgeError as exc:
        return _not_judged(item.pair, f"the judge could not run it: {exc}", judge=True)
    return SetRecord(
        problem=item.pair.problem,
        kernel=item.pair.kernel,
        kernel_hash=item.kernel_hash,
        task_hash=item.task.hash,
        policies=policies_of(result),
        result=result,
    )


def _not_judged(pair: SetPair, reason: str, *, judge: bool = False) -> NotJudged:
    return NotJudged(problem=pair.problem, kernel=pair.kernel, reason=reason, judge_failed=judge)
