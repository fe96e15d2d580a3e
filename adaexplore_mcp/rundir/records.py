"""What a run directory's JSON files hold (``layout.py`` says where each one lies)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from adaexplore_mcp.judge.policy import Ops, Precision

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


class TaskRunSummary(BaseModel):
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


class ModelUsage(BaseModel):
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    failed_calls: int = 0
    retries: int = 0
