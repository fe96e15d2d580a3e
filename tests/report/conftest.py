"""Synthetic run directories, written with the driver's own record writers, so these tests do
not depend on the driver's strategies."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from adaexplore_mcp.config import Precision
from adaexplore_mcp.driver.records import (
    RunConfig,
    StepRecord,
    TaskRecord,
    TaskSummary,
    Usage,
    append_event,
    step_dir,
    write_json,
    write_text,
)
from adaexplore_mcp.tasks import task_from_source

SOFTMAX_TASK = '''"""Row-wise softmax."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


batch_size = 64
dim = 128


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


SMALL_SHAPES = {"batch_size": 8, "dim": 64}
'''


@dataclass
class StepSpec:
    outcome: str = "correct"
    speedup: float | None = None
    node_id: int | None = None
    parent_id: int | None = 0
    action: str = "large"
    kernel: str | None = None


@dataclass
class TaskSpec:
    name: str
    correct: bool | None  # None: no summary (missing)
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    timing: bool = True
    steps: list[StepSpec] = field(default_factory=list)
    best_kernel: str | None = None
    best_node_id: int | None = None
    source: str = SOFTMAX_TASK
    search_id: str | None = None
    cost_usd: float | None = 0.01


def make_run(
    root: Path,
    tasks: list[TaskSpec],
    *,
    precision: Precision = Precision.STRICT,
    strategy: str = "adaexplore",
    device_name: str = "NVIDIA H200",
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    config = RunConfig(
        strategy=strategy,
        memory="rules",
        provider="replay",
        model="test-model",
        steps=10,
        workers=1,
        tasks=[t.name for t in tasks],
        precision=precision,
        judge="local",
        device="cuda:0",
        started_at=1_700_000_000.0,
        version="0.1.0",
    )
    write_json(root / "run.json", config)
    write_json(root / "usage.json", Usage(calls=3, input_tokens=300, output_tokens=120))
    clock = 1_700_000_000.0
    for spec in tasks:
        directory = root / "tasks" / spec.name
        task_hash = task_from_source(spec.source, spec.name).hash
        record = TaskRecord(name=spec.name, hash=task_hash, source=spec.source)
        if spec.search_id is not None:
            record.search_id = spec.search_id
        write_json(directory / "task.json", record)
        for number, step in enumerate(spec.steps, start=1):
            clock += 1
            event = StepRecord(
                task=spec.name,
                step=number,
                strategy=strategy,
                action=step.action,
                outcome=step.outcome,
                node_id=step.node_id,
                parent_id=step.parent_id if step.node_id is not None else None,
                speedup_eager=step.speedup,
                input_tokens=100,
                output_tokens=40,
                started_at=clock - 0.5,
                finished_at=clock,
            )
            append_event(root, event)
            write_json(step_dir(root, spec.name, number) / "step.json", event)
            if step.kernel is not None:
                write_text(step_dir(root, spec.name, number) / "kernel.py", step.kernel)
        if spec.best_kernel is not None:
            write_text(directory / "best_kernel.py", spec.best_kernel)
        if spec.correct is None:
            continue
        timed = spec.timing and spec.correct
        summary = TaskSummary(
            task=spec.name,
            precision=precision,
            steps=len(spec.steps),
            correct=spec.correct,
            best_node_id=spec.best_node_id,
            best_runtime_ms=(1.0 / spec.speedup_eager) if timed and spec.speedup_eager else None,
            speedup_eager=spec.speedup_eager if timed else None,
            speedup_compile=spec.speedup_compile if timed else None,
            eager_ms=1.0 if timed else None,
            timing_meaningful=timed,
            device_name=device_name if spec.timing else "cpu",
            input_tokens=100 * len(spec.steps),
            output_tokens=40 * len(spec.steps),
            cost_usd=spec.cost_usd,
        )
        write_json(directory / "summary.json", summary)
    return root


@pytest.fixture
def five_task_run(tmp_path: Path) -> Path:
    """Three correct tasks (2.0x, 0.5x, 1.5x eager), one incorrect, one missing."""
    return make_run(
        tmp_path / "run",
        [
            TaskSpec("a", True, 2.0, 1.0, steps=[StepSpec("correct", 2.0, 1)]),
            TaskSpec(
                "b",
                True,
                0.5,
                0.25,
                steps=[StepSpec("compile_error", None, 1), StepSpec("correct", 0.5, 2)],
            ),
            TaskSpec("c", True, 1.5, 3.0, steps=[StepSpec("correct", 1.5, 1)]),
            TaskSpec("d", False, steps=[StepSpec("incorrect", None, 1)]),
            TaskSpec("e", None),
        ],
    )
