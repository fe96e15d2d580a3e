"""Reading a run directory (``adaexplore_mcp.driver.records``) into one model.

The driver writes records atomically, but a run may still be unfinished: a task without a
summary has not finished (or never started), and counts as a task without a correct kernel.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, Field, ValidationError

from adaexplore_mcp.config import Ops, Precision
from adaexplore_mcp.driver.records import (
    FORMAT,
    RunConfig,
    StepRecord,
    TaskRecord,
    TaskSummary,
    Usage,
    read_events,
)

M = TypeVar("M", bound=BaseModel)


class RunDirError(ValueError):
    """A path that is not a readable run directory; the message says what to do."""


class TaskRun(BaseModel):
    """One task of a run, as far as the run got with it."""

    name: str
    directory: Path
    record: TaskRecord | None = Field(description="task.json; None if the task never started.")
    summary: TaskSummary | None = Field(description="summary.json; None until it finishes.")
    events: list[StepRecord] = Field(description="Its steps, in the order they finished.")

    @property
    def best_kernel_path(self) -> Path:
        return self.directory / "best_kernel.py"

    def best_kernel(self) -> str | None:
        path = self.best_kernel_path
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def step_kernel(self, step: int) -> str | None:
        path = self.directory / "steps" / f"{step:04d}" / "kernel.py"
        return path.read_text(encoding="utf-8") if path.is_file() else None


class RunData(BaseModel):
    path: Path
    config: RunConfig
    usage: Usage | None
    tasks: list[TaskRun] = Field(description="RunConfig.tasks in order, then any other found.")

    @property
    def precision(self) -> Precision:
        return self.config.precision

    @property
    def ops(self) -> Ops:
        return self.config.ops

    def task(self, name: str) -> TaskRun:
        for task in self.tasks:
            if task.name == name:
                return task
        raise RunDirError(
            f"the run {self.path} has no task {name!r}; its tasks are: "
            + ", ".join(t.name for t in self.tasks)
        )


def is_run_dir(path: Path) -> bool:
    return (path / "run.json").is_file()


def load_run(path: str | Path) -> RunData:
    """Every record of a run directory. Raises ``RunDirError`` when ``path`` is not one."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise RunDirError(f"{path} is not a directory; pass the folder `adaexplore-mcp drive` made")
    if not is_run_dir(path):
        raise RunDirError(
            f"{path} has no run.json, so it is not a run directory; pass the folder that "
            "`adaexplore-mcp drive` wrote (it holds run.json, events.jsonl and tasks/)"
        )
    config = _read(path / "run.json", RunConfig)
    assert config is not None
    if config.format != FORMAT:
        raise RunDirError(
            f"{path / 'run.json'} is in format {config.format!r}; this version reads {FORMAT!r}"
        )
    usage = _read(path / "usage.json", Usage)
    events = read_events(path)
    tasks_root = path / "tasks"
    found = (
        sorted(p.name for p in tasks_root.iterdir() if p.is_dir()) if tasks_root.is_dir() else []
    )
    names = list(dict.fromkeys([*config.tasks, *found]))
    tasks = [
        TaskRun(
            name=name,
            directory=tasks_root / name,
            record=_read(tasks_root / name / "task.json", TaskRecord),
            summary=_read(tasks_root / name / "summary.json", TaskSummary),
            events=[event for event in events if event.task == name],
        )
        for name in names
    ]
    return RunData(path=path, config=config, usage=usage, tasks=tasks)


def _read(path: Path, model: type[M]) -> M | None:
    if not path.is_file():
        return None
    try:
        return model.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, ValueError) as exc:
        raise RunDirError(f"{path} is not a valid {model.__name__}: {exc}") from None
