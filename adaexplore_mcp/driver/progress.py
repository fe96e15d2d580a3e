"""Where a run stands, for a display or a caller: one row per task and the run's usage."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from adaexplore_mcp.rundir import ModelUsage, RunConfig, TaskRunSummary


class TaskProgress(BaseModel):
    task: str
    steps: int
    done: int = 0
    running: int = 0
    best: str = "-"
    last: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


class RunProgress(BaseModel):
    run_dir: Path
    config: RunConfig
    tasks: list[TaskProgress]
    usage: ModelUsage


class RunResult(BaseModel):
    """What a finished (or stopped) run leaves: its directory, its summaries, its usage."""

    run_dir: Path
    config: RunConfig
    summaries: list[TaskRunSummary]
    usage: ModelUsage
    steps_done: int
    steps_planned: int

    @property
    def complete(self) -> bool:
        return self.steps_done >= self.steps_planned


class Observer(Protocol):
    """Told where the run stands whenever a step starts or ends (a live display)."""

    def update(self, progress: RunProgress) -> None: ...


def best_label(summary: TaskRunSummary | None) -> str:
    """The best kernel in a few characters: speedups over eager and torch.compile, or
    'correct (CPU)' where the interpreter gives no timing."""
    if summary is None or not summary.correct:
        return "-"
    if not summary.timing_meaningful or summary.speedup_eager is None:
        return "correct (CPU)"
    compiled = f"{summary.speedup_compile:.2f}x" if summary.speedup_compile is not None else "-"
    return f"{summary.speedup_eager:.2f}x / {compiled}"
