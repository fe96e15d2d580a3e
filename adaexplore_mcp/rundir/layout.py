"""The run directory's layout: the one module that spells its file and folder names.

::

    RUN_DIR/
      run.json                       RunConfig: how the run was started (resume checks it)
      events.jsonl                   one StepRecord a line, in the order steps finished
      usage.json                     ModelUsage: tokens and cost over the whole run
      report.html                    written by ``adaexplore-mcp report`` (absent until then)
      tasks/<task>/
        task.json                    TaskRecord: name, hash, source, the search's id
        summary.json                 TaskRunSummary: the best kernel and the task's totals
        reeval.json                  every ``adaexplore-mcp reeval`` of the task, oldest first
        best_kernel.py               the best correct kernel (absent while none is correct)
        steps/<NNNN>/                one folder per step, NNNN from 0001
          prompt.txt                 every message sent, in order (system first)
          reply.txt                  the model's reply, as received
          kernel.py                  the kernel the step sent to the judge (absent if none)
          verdict.json               the judge's EvalResult (absent if nothing was judged)
          step.json                  StepRecord

Runs started without ``--run-dir`` go under ``ADAEXPLORE_HOME/runs/``. Code elsewhere asks these
classes for a path instead of joining names itself, so the layout can be read in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

RUN_CONFIG_FILE = "run.json"
EVENTS_FILE = "events.jsonl"
USAGE_FILE = "usage.json"
REPORT_FILE = "report.html"
TASKS_DIR = "tasks"
TASK_RECORD_FILE = "task.json"
SUMMARY_FILE = "summary.json"
REEVAL_FILE = "reeval.json"
BEST_KERNEL_FILE = "best_kernel.py"
STEPS_DIR = "steps"
PROMPT_FILE = "prompt.txt"
REPLY_FILE = "reply.txt"
KERNEL_FILE = "kernel.py"
VERDICT_FILE = "verdict.json"
STEP_RECORD_FILE = "step.json"
RUNS_DIR = "runs"


def step_dir(run_dir: Path, task: str, step: int) -> Path:
    """The folder of a task's step ``step`` (1-based) in the run directory ``run_dir``."""
    return RunPaths(run_dir).step(task, step).directory


def runs_root(home: Path) -> Path:
    """Where a run goes when no ``--run-dir`` is given: one folder per run under ``home``."""
    return home / RUNS_DIR


@dataclass(frozen=True)
class StepPaths:
    """The files of one step's folder."""

    directory: Path

    @property
    def prompt(self) -> Path:
        return self.directory / PROMPT_FILE

    @property
    def reply(self) -> Path:
        return self.directory / REPLY_FILE

    @property
    def kernel(self) -> Path:
        return self.directory / KERNEL_FILE

    @property
    def verdict(self) -> Path:
        return self.directory / VERDICT_FILE

    @property
    def record(self) -> Path:
        return self.directory / STEP_RECORD_FILE


@dataclass(frozen=True)
class TaskPaths:
    """The files of one task's folder."""

    directory: Path

    @property
    def record(self) -> Path:
        return self.directory / TASK_RECORD_FILE

    @property
    def summary(self) -> Path:
        return self.directory / SUMMARY_FILE

    @property
    def reeval(self) -> Path:
        return self.directory / REEVAL_FILE

    @property
    def best_kernel(self) -> Path:
        return self.directory / BEST_KERNEL_FILE

    @property
    def steps(self) -> Path:
        return self.directory / STEPS_DIR

    def step(self, number: int) -> StepPaths:
        # zero-padded so that a listing sorts steps in order
        return StepPaths(self.steps / f"{number:04d}")


@dataclass(frozen=True)
class RunPaths:
    """The files of one run directory."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / RUN_CONFIG_FILE

    @property
    def events(self) -> Path:
        return self.root / EVENTS_FILE

    @property
    def usage(self) -> Path:
        return self.root / USAGE_FILE

    @property
    def report(self) -> Path:
        return self.root / REPORT_FILE

    @property
    def tasks(self) -> Path:
        return self.root / TASKS_DIR

    def task(self, name: str) -> TaskPaths:
        return TaskPaths(self.tasks / name)

    def step(self, task: str, number: int) -> StepPaths:
        return self.task(task).step(number)

    def step_records(self) -> list[Path]:
        """Every task's step records, sorted by path (task, then step)."""
        return sorted(self.tasks.glob(f"*/{STEPS_DIR}/*/{STEP_RECORD_FILE}"))

    def is_run(self) -> bool:
        return self.config.is_file()
