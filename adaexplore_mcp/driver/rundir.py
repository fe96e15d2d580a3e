"""Reading and writing one run directory (the format is ``records.py``'s).

A step is finished when its ``step.json`` and its line in ``events.jsonl`` are written, in that
order. Reopening a run repairs the one gap an interruption can leave between the two (a
``step.json`` whose line is missing gets it), so the finished steps are exactly the lines of
``events.jsonl``; a step folder without ``step.json`` never finished and is done again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import ValidationError

from adaexplore_mcp.driver.errors import EXIT_USAGE, DriveError
from adaexplore_mcp.driver.records import (
    RunConfig,
    StepRecord,
    TaskRecord,
    TaskSummary,
    Usage,
    append_event,
    read_events,
    step_dir,
    write_json,
    write_text,
)
from adaexplore_mcp.judge import EvalResult


class RunDirError(DriveError):
    """The run directory cannot be used as asked; the message says what to do."""

    exit_code = EXIT_USAGE


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def create(cls, path: Path, config: RunConfig) -> RunDir:
        if (path / "run.json").exists():
            raise RunDirError(
                f"{path} already holds a run: add --resume to continue it, or give another "
                "--run-dir"
            )
        path.mkdir(parents=True, exist_ok=True)
        run = cls(path)
        write_json(path / "run.json", config)
        return run

    @classmethod
    def reopen(cls, path: Path) -> tuple[RunDir, RunConfig]:
        file = path / "run.json"
        if not file.is_file():
            raise RunDirError(
                f"{path} holds no run (no run.json): give the --run-dir of an earlier "
                "`adaexplore-mcp drive`, or leave out --resume to start a new run"
            )
        try:
            config = RunConfig.model_validate_json(file.read_text())
        except ValidationError as exc:
            raise RunDirError(f"{file} is not a run's configuration: {exc}") from None
        run = cls(path)
        run.repair()
        return run, config

    def repair(self) -> None:
        """Appends the events of steps whose step.json was written but whose line was not."""
        logged = {(r.task, r.step) for r in read_events(self.path)}
        for file in sorted(self.path.glob("tasks/*/steps/*/step.json")):
            try:
                record = StepRecord.model_validate_json(file.read_text())
            except (ValidationError, OSError):
                continue
            if (record.task, record.step) not in logged:
                append_event(self.path, record)
                logged.add((record.task, record.step))

    # -- reading -------------------------------------------------------------------------------

    def finished(self) -> dict[str, dict[int, StepRecord]]:
        """Finished steps by task and number; a duplicated line counts once."""
        steps: dict[str, dict[int, StepRecord]] = {}
        for record in read_events(self.path):
            steps.setdefault(record.task, {}).setdefault(record.step, record)
        return steps

    def task_record(self, task: str) -> TaskRecord | None:
        file = self.task_dir(task) / "task.json"
        if not file.is_file():
            return None
        return TaskRecord.model_validate_json(file.read_text())

    def usage(self) -> Usage:
        file = self.path / "usage.json"
        if not file.is_file():
            return Usage()
        try:
            return Usage.model_validate_json(file.read_text())
        except ValidationError:
            return Usage()

    def failures(self, task: str) -> list[str]:
        """One line per failed step of a task (the judge's error, or why no kernel was judged),
        for the reasoning bank's lesson."""
        lines = []
        for record in self.finished().get(task, {}).values():
            if record.outcome == "correct":
                continue
            detail = record.reason
            verdict = step_dir(self.path, task, record.step) / "verdict.json"
            if detail is None and verdict.is_file():
                try:
                    result = EvalResult.model_validate_json(verdict.read_text())
                except ValidationError:
                    result = None
                if result is not None:
                    error = result.error
                    detail = f"{error.type}: {error.message}" if error else result.message
            line = record.outcome.replace("_", " ")
            if detail:
                line += f": {detail.strip().splitlines()[0][:160]}"
            lines.append(line)
        return lines

    # -- writing -------------------------------------------------------------------------------

    def task_dir(self, task: str) -> Path:
        return self.path / "tasks" / task

    def write_task(self, record: TaskRecord) -> None:
        write_json(self.task_dir(record.name) / "task.json", record)

    def begin_step(self, task: str, step: int) -> Path:
        """The step's folder, emptied of what an interrupted earlier attempt left."""
        folder = step_dir(self.path, task, step)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        return folder

    def write_step_text(self, task: str, step: int, name: str, text: str) -> None:
        write_text(step_dir(self.path, task, step) / name, text)

    def write_step_json(self, task: str, step: int, name: str, model) -> None:
        write_json(step_dir(self.path, task, step) / name, model)

    def finish_step(self, record: StepRecord) -> None:
        write_json(step_dir(self.path, record.task, record.step) / "step.json", record)
        append_event(self.path, record)

    def write_summary(self, summary: TaskSummary) -> None:
        write_json(self.task_dir(summary.task) / "summary.json", summary)

    def write_best(self, task: str, code: str) -> None:
        write_text(self.task_dir(task) / "best_kernel.py", code)

    def write_usage(self, usage: Usage) -> None:
        write_json(self.path / "usage.json", usage)
