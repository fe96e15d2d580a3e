"""Synthetic run directories, written with the driver's own record writers, so these tests do
not depend on the driver's strategies."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.memory import SkillMemory
from adaexplore_mcp.memory.settings import MemorySettings
from adaexplore_mcp.rundir import (
    ModelUsage,
    RunConfig,
    StepRecord,
    TaskRecord,
    TaskRunSummary,
    append_event,
    step_dir,
    write_json,
    write_text,
)
from adaexplore_mcp.search_engine import Edit, SearchEngine
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import Task, task_from_source
from tests.search_engine.fakes import FakeJudge, kernel

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
    ops: Ops = Ops.TRITON,
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
        ops=ops,
        judge="local",
        device="cuda:0",
        started_at=1_700_000_000.0,
        version="0.1.0",
    )
    write_json(root / "run.json", config)
    write_json(root / "usage.json", ModelUsage(calls=3, input_tokens=300, output_tokens=120))
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
        summary = TaskRunSummary(
            task=spec.name,
            precision=precision,
            ops=ops,
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


# -- a real search in a temporary store ----------------------------------------------------------

HOSTILE = '</script><script>alert("x")</script><marquee>&amp;'


@dataclass
class SearchFixture:
    store: Store
    search_id: str
    task: Task
    codes: dict[int, str]


def make_search(store: Store) -> SearchFixture:
    """root -> 1 (large, 1.2x) -> 2 (small, 2x) -> 5 (small, 2.5x, the best);
    1 -> 3 (small, compile error); root -> 4 (large, incorrect)."""
    task = task_from_source(SOFTMAX_TASK, "softmax_rows")
    engine = SearchEngine(store, FakeJudge(), SearchSettings(seed=1, max_steps=20))
    search = engine.start_search(task)

    async def build() -> None:
        await engine.regenerate(search.id, kernel(speed=1.2), 0)
        await engine.apply_patch(search.id, 1, [Edit(old_str="speed: 1.2", new_str="speed: 2.0")])
        await engine.apply_patch(
            search.id, 1, [Edit(old_str="# speed: 1.2", new_str="# fails: compile")]
        )
        await engine.regenerate(search.id, kernel(fails="incorrect"), 0)
        await engine.apply_patch(
            search.id,
            2,
            [Edit(old_str="speed: 2.0", new_str=f"speed: 2.5\n# {HOSTILE}")],
        )

    asyncio.run(build())
    export = engine.export(search.id)
    codes = {node.id: node.code for node in export.nodes if node.code is not None}
    return SearchFixture(store=store, search_id=search.id, task=task, codes=codes)


def run_for_search(root: Path, fixture: SearchFixture, **kwargs: Any) -> Path:
    """A run directory whose one task is the fixture's search."""
    steps = [
        StepSpec("correct", 1.2, 1, 0, "large", fixture.codes[1]),
        StepSpec("correct", 2.0, 2, 1, "small", fixture.codes[2]),
        StepSpec("compile_error", None, 3, 1, "small", fixture.codes[3]),
        StepSpec("patch_failed", None, None),
        StepSpec("incorrect", None, 4, 0, "large", fixture.codes[4]),
        StepSpec("correct", 2.5, 5, 2, "small", fixture.codes[5]),
    ]
    spec = TaskSpec(
        "softmax_rows",
        True,
        2.5,
        1.8,
        steps=steps,
        best_kernel=fixture.codes[5],
        best_node_id=5,
        search_id=fixture.search_id,
    )
    return make_run(root, [spec, TaskSpec("never_ran", None)], **kwargs)


def add_rules(store: Store) -> None:
    memory = SkillMemory(store, MemorySettings(starter=False))
    memory.add_rule("You cannot call tl.arange with a length that is not a power of two.")
    memory.add_rule(f"You cannot write {HOSTILE} into a kernel's docstring.")
