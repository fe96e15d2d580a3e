"""The run directory as ``adaexplore-mcp drive`` writes it, and reads it back to resume.

A step is finished when its ``step.json`` and its line in ``events.jsonl`` are written, in that
order. Reopening a run repairs the one gap an interruption can leave between the two (a
``step.json`` whose line is missing gets it), so the finished steps are exactly the lines of
``events.jsonl``; a step folder without ``step.json`` never finished and is done again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import BaseModel, ValidationError

from adaexplore_mcp.judge import EvalResult
from adaexplore_mcp.rundir.errors import RunDirError
from adaexplore_mcp.rundir.files import append_event, read_events, write_json, write_text
from adaexplore_mcp.rundir.layout import RunPaths
from adaexplore_mcp.rundir.records import (
    ModelUsage,
    RunConfig,
    StepRecord,
    TaskRecord,
    TaskRunSummary,
)


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.paths = RunPaths(path)

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def create(cls, path: Path, config: RunConfig) -> RunDir:
        run = cls(path)
        if run.paths.config.exists():
            raise RunDirError(
                f"{path} already holds a run: add --resume to continue it, or give another "
                "--run-dir"
            )
        path.mkdir(parents=True, exist_ok=True)
        write_json(run.paths.config, config)
        return run

    @classmethod
    def reopen(cls, path: Path) -> tuple[RunDir, RunConfig]:
        run = cls(path)
        file = run.paths.config
        if not file.is_file():
            raise RunDirError(
                f"{path} holds no run (no {file.name}): give the --run-dir of an earlier "
                "`adaexplore-mcp drive`, or leave out --resume to start a new run"
            )
        try:
            config = RunConfig.model_validate_json(file.read_text())
        except ValidationError as exc:
            raise RunDirError(f"{file} is not a run's configuration: {exc}") from None
        run.repair()
        return run, config

    def repair(self) -> None:
        """Appends the events of steps whose step.json was written but whose line was not."""
        logged = {(r.task, r.step) for r in read_events(self.path)}
        for file in self.paths.step_records():
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
        file = self.paths.task(task).record
        if not file.is_file():
            return None
        return TaskRecord.model_validate_json(file.read_text())

    def usage(self) -> ModelUsage:
        file = self.paths.usage
        if not file.is_file():
            return ModelUsage()
        try:
            return ModelUsage.model_validate_json(file.read_text())
        except ValidationError:
            return ModelUsage()

    def best_kernel(self, task: str) -> str | None:
        file = self.paths.task(task).best_kernel
        return file.read_text() if file.is_file() else None

    def failures(self, task: str) -> list[str]:
        """One line per failed step of a task (the judge's error, or why no kernel was judged),
        for the reasoning bank's lesson."""
        lines = []
        for record in self.finished().get(task, {}).values():
            if record.outcome == "correct":
                continue
            detail = record.reason
            verdict = self.paths.step(task, record.step).verdict
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

    def write_task(self, record: TaskRecord) -> None:
        write_json(self.paths.task(record.name).record, record)

    def begin_step(self, task: str, step: int) -> Path:
        """The step's folder, emptied of what an interrupted earlier attempt left."""
        folder = self.paths.step(task, step).directory
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        return folder

    def write_prompt(self, task: str, step: int, text: str) -> None:
        write_text(self.paths.step(task, step).prompt, text)

    def write_reply(self, task: str, step: int, text: str) -> None:
        write_text(self.paths.step(task, step).reply, text)

    def write_kernel(self, task: str, step: int, code: str) -> None:
        write_text(self.paths.step(task, step).kernel, code)

    def write_verdict(self, task: str, step: int, result: BaseModel) -> None:
        write_json(self.paths.step(task, step).verdict, result)

    def finish_step(self, record: StepRecord) -> None:
        write_json(self.paths.step(record.task, record.step).record, record)
        append_event(self.path, record)

    def write_summary(self, summary: TaskRunSummary) -> None:
        write_json(self.paths.task(summary.task).summary, summary)

    def write_best(self, task: str, code: str) -> None:
        write_text(self.paths.task(task).best_kernel, code)

    def write_usage(self, usage: ModelUsage) -> None:
        write_json(self.paths.usage, usage)
