"""The run directory: what ``adaexplore-mcp drive`` writes and ``stats``/``reeval``/``report``
read. Every file is JSON (or text for prompts, replies and kernels), written atomically
(temporary file, then rename), so an interrupted run leaves no half-written record.

::

    RUN_DIR/
      run.json                       RunConfig: how the run was started (resume checks it)
      events.jsonl                   one StepRecord a line, in the order steps finished
      usage.json                     Usage: tokens and cost over the whole run
      tasks/<task>/
        task.json                    TaskRecord: name, hash, source, the search's id
        summary.json                 TaskSummary: the best kernel and the task's totals
        steps/<NNNN>/                one folder per step, NNNN from 0001
          prompt.txt                 every message sent, in order (system first)
          reply.txt                  the model's reply, as received
          kernel.py                  the kernel the step sent to the judge (absent if none)
          verdict.json               the judge's EvalResult (absent if nothing was judged)
          step.json                  StepRecord
        best_kernel.py               the best correct kernel (absent while none is correct)
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from adaexplore_mcp.config import Ops, Precision

FORMAT = "adaexplore-run/1"

Strategy = Literal["adaexplore", "one-shot", "best-of-n", "refine", "metr"]
MemoryMode = Literal["none", "rules", "reasoning-bank"]
StepOutcome = Literal[
    "correct",
    "incorrect",
    "compile_error",
    "runtime_error",
    "timeout",
    "rejected",
    "patch_failed",  # the model's edits did not apply: no node, no evaluation
    "unusable_reply",  # nothing usable in the reply: a counted failed step
    "llm_error",  # the provider failed after its retries
]


class RunConfig(BaseModel):
    format: str = FORMAT
    strategy: Strategy
    memory: MemoryMode
    provider: str = Field(description="anthropic | openai | azure | replay")
    model: str
    base_url: str | None = None
    steps: int = Field(description="Steps per task.")
    workers: int
    tasks: list[str] = Field(description="Task names, in the order given.")
    precision: Precision = Precision.STRICT
    ops: Ops = Ops.TRITON
    judge: str = Field(description="'local' or the judge service's URL.")
    device: str | None = None
    replay: bool = Field(
        default=False, description="Replies came from a recorded transcript, not a live model."
    )
    home: str | None = Field(
        default=None,
        description="ADAEXPLORE_HOME of the run: its database holds the searches and the rules.",
    )
    started_at: float
    version: str


class StepRecord(BaseModel):
    task: str
    step: int = Field(ge=1, description="1-based, per task.")
    worker: int = 0
    strategy: Strategy
    action: Literal["large", "small", "sample", "refine"] = Field(
        description="large/small: AdaExplore's steps; sample: a fresh kernel (one-shot, "
        "best-of-n, metr); refine: a whole new version of the latest kernel."
    )
    outcome: StepOutcome
    reason: str | None = Field(default=None, description="Why a step failed without a verdict.")
    node_id: int | None = None
    parent_id: int | None = None
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    runtime_ms: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    rules_in_prompt: int = 0
    started_at: float
    finished_at: float


class TaskRecord(BaseModel):
    name: str
    hash: str
    source: str
    search_id: str | None = None


class TaskSummary(BaseModel):
    task: str
    precision: Precision
    ops: Ops = Ops.TRITON
    steps: int
    correct: bool = Field(description="A correct kernel was found.")
    best_node_id: int | None = None
    best_runtime_ms: float | None = None
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    timing_meaningful: bool = False
    device_name: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    remeasured: bool = Field(default=False, description="Updated by `adaexplore-mcp reeval`.")


class Usage(BaseModel):
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    failed_calls: int = 0
    retries: int = 0


def write_json(path: Path, model: BaseModel | dict | list) -> None:
    """Writes JSON atomically: a reader (or a resumed run) never sees half a file."""
    text = model.model_dump_json(indent=1) if isinstance(model, BaseModel) else json.dumps(model)
    write_text(path, text + "\n")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    # os.open with 0o666 lets the umask decide the mode, as for any file the user writes;
    # mkstemp would make every run file private (0600).
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def append_event(run_dir: Path, record: StepRecord) -> None:
    """One line in events.jsonl; a line is written whole (O_APPEND, one write)."""
    line = (record.model_dump_json() + "\n").encode()
    fd = os.open(run_dir / "events.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_events(run_dir: Path) -> list[StepRecord]:
    """Every step record; a last line cut by a crash is ignored."""
    path = run_dir / "events.jsonl"
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                records.append(StepRecord.model_validate_json(line))
            except ValueError:
                continue
    return records


def step_dir(run_dir: Path, task: str, step: int) -> Path:
    return run_dir / "tasks" / task / "steps" / f"{step:04d}"
