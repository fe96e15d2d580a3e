"""Reading a run directory into one model, for ``stats``, ``reeval`` and ``report``.

The driver writes records atomically, but a run may still be unfinished: a task without a
summary has not finished (or never started), and counts as a task without a correct kernel.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, Field, ValidationError

from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.rundir.errors import RunDirError
from adaexplore_mcp.rundir.files import read_events
from adaexplore_mcp.rundir.layout import (
    EVENTS_FILE,
    RUN_CONFIG_FILE,
    TASKS_DIR,
    RunPaths,
    TaskPaths,
)
from adaexplore_mcp.rundir.records import (
    FORMAT,
    ModelUsage,
    RunConfig,
    StepRecord,
    TaskRecord,
    TaskRunSummary,
)

M = TypeVar("M", bound=BaseModel)


class TaskRun(BaseModel):
    """One task of a run, as far as the run got with it."""

    name: str
    directory: Path
    record: TaskRecord | None = Field(description="task.json; None if the task never started.")
    summary: TaskRunSummary | None = Field(description="summary.json; None until it finishes.")
    events: list[StepRecord] = Field(description="Its steps, in the order they finished.")

    @property
    def paths(self) -> TaskPaths:
        return TaskPaths(self.directory)

    @property
    def best_kernel_path(self) -> Path:
        return self.paths.best_kernel

    def best_kernel(self) -> str | None:
        path = self.best_kernel_path
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def step_kernel(self, step: int) -> str | None:
        path = self.paths.step(step).kernel
        return path.read_text(encoding="utf-8") if path.is_file() else None


class RunData(BaseModel):
    path: Path
    config: RunConfig
    usage: ModelUsage | None
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
    return RunPaths(path).is_run()


def load_run(path: str | Path) -> RunData:
    """Every record of a run directory. Raises ``RunDirError`` when ``path`` is not one."""
    path = Path(path).expanduser()
    paths = RunPaths(path)
    if not path.is_dir():
        raise RunDirError(f"{path} is not a directory; pass the folder `adaexplore-mcp drive` made")
    if not paths.is_run():
        raise RunDirError(
            f"{path} has no {RUN_CONFIG_FILE}, so it is not a run directory; pass the folder "
            f"that `adaexplore-mcp drive` wrote (it holds {RUN_CONFIG_FILE}, {EVENTS_FILE} and "
            f"{TASKS_DIR}/)"
        )
    config = _read(paths.config, RunConfig)
    assert config is not None
    if config.format != FORMAT:
        raise RunDirError(
            f"{paths.config} is in format {config.format!r}; this version reads {FORMAT!r}"
        )
    usage = _read(paths.usage, ModelUsage)
    events = read_events(path)
    found = (
        sorted(p.name for p in paths.tasks.iterdir() if p.is_dir()) if paths.tasks.is_dir() else []
    )
    names = list(dict.fromkeys([*config.tasks, *found]))
    tasks = []
    for name in names:
        task = paths.task(name)
        tasks.append(
            TaskRun(
                name=name,
                directory=task.directory,
                record=_read(task.record, TaskRecord),
                summary=_read(task.summary, TaskRunSummary),
                events=[event for event in events if event.task == name],
            )
        )
    return RunData(path=path, config=config, usage=usage, tasks=tasks)


def _read(path: Path, model: type[M]) -> M | None:
    if not path.is_file():
        return None
    try:
        return model.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, ValueError) as exc:
        raise RunDirError(f"{path} is not a valid {model.__name__}: {exc}") from None
