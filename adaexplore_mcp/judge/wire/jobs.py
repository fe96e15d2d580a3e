"""Messages between the pool, its warm workers and the trusted judge process of each job.

They travel as frames (``wire.frames``) on pipes and sockets the trusted processes share
privately. No
candidate or task process ever holds one of these pipes: what those processes say reaches the
trusted judge process on sockets of their own, and the verdict is that process's alone.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from adaexplore_mcp.judge.policy import Ops, Precision, Tolerance
from adaexplore_mcp.judge.result import Phase, SandboxReport
from adaexplore_mcp.judge.settings import IntegritySettings, SandboxSettings, TimingSettings
from adaexplore_mcp.tasks import Task


class ChildJob(BaseModel):
    """Everything the processes of one job need. It travels on pipes and sockets only, never on
    disk, argv or the environment: the trusted process reads it once its processes are up and
    hands each user-code process its part (``HandedJob``); the seed stays in the trusted
    process."""

    kind: Literal["eval", "baseline", "lint", "probe"]
    task: Task | None = None
    code: str | None = None
    device: str = Field(description="'cpu', or 'cuda:N' as the caller names the GPU.")
    seed: int = 0
    trials: int = Field(default=3, ge=1, le=100)  # as ``JudgeSettings`` bounds them
    odd_trials: int = Field(default=1, ge=1, le=100)
    tolerances: dict[str, Tolerance] = Field(default_factory=dict)
    precision: Precision = Precision.STRICT
    ops: Ops = Ops.TRITON
    timing: TimingSettings = Field(default_factory=TimingSettings)
    integrity: IntegritySettings = Field(default_factory=IntegritySettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    gpu_lock: str | None = Field(default=None, description="Lock file base path for this GPU.")
    output_limit_bytes: int = 16 * 1024 * 1024
    cache_dir: str | None = Field(
        default=None,
        description="A persistent compiler cache for this task's baselines; only the task's own "
        "process of a baseline job sees it.",
    )
    peaks: dict[str, float] = Field(
        default_factory=dict,
        description="Matmul FLOP/s by math ('float16 matmul'), the highest a trusted process of "
        "this pool measured on this GPU: a trusted process measures only a math missing here.",
    )


def task_identity(job: ChildJob) -> str | None:
    """What an evaluation's task process may be kept for: the next evaluation of the very same
    task (``worker.kept``). None for every other job: their task processes serve one job."""
    if job.kind != "eval" or job.task is None:
        return None
    return hashlib.sha256(job.task.model_dump_json().encode()).hexdigest()


class DevicePrepared(BaseModel):
    """A user-code process to the trusted process: ready for a job. Sent once its CUDA context
    is made (it held the GPU lock shared meanwhile), before any user code loads; a kept task
    process sends it again after each job it served (``worker.kept``)."""

    kind: Literal["prepared"] = "prepared"


prepared_adapter: TypeAdapter[DevicePrepared] = TypeAdapter(DevicePrepared)


class ResidentOrder(BaseModel):
    """The worker to its resident trusted process (``trusted.resident``).

    ``job``: descriptors come with it: the job's pipe, the report pipe, the output pipe, then
    the trusted end of each user-code process's socket, in ``roles`` order. ``reaped``: every
    process of job ``seq`` and of those before it is gone."""

    kind: Literal["job", "reaped"]
    seq: int
    roles: list[Literal["candidate", "task"]] = Field(default_factory=list)
    calibrated: bool = False  # the job uses the null subject
    task_kept: bool = False  # the task's process outlives the job (``worker.kept``)
    # role -> the process group of that user-code process (its own, which it cannot leave):
    # the trusted process stops them while it calibrates (``trusted.timing``)
    groups: dict[str, int] = Field(default_factory=dict)


resident_order_adapter: TypeAdapter[ResidentOrder] = TypeAdapter(ResidentOrder)


class HandedJob(BaseModel):
    """The first frame the trusted process sends each user-code process: its part of the job."""

    kind: Literal["job"] = "job"
    job: ChildJob


handed_job_adapter: TypeAdapter[HandedJob] = TypeAdapter(HandedJob)


class JobMessage(BaseModel):
    type: Literal["job"] = "job"
    id: str
    timeout_s: float
    child: ChildJob


class CancelMessage(BaseModel):
    type: Literal["cancel"] = "cancel"
    id: str


class ShutdownMessage(BaseModel):
    type: Literal["shutdown"] = "shutdown"


ToWorker = Annotated[JobMessage | CancelMessage | ShutdownMessage, Field(discriminator="type")]


class ReadyMessage(BaseModel):
    type: Literal["ready"] = "ready"
    pid: int
    torch: str
    triton: str
    python: str
    import_s: float
    sandbox: SandboxReport = Field(description="What the worker could set up for user code.")


class PhaseMessage(BaseModel):
    type: Literal["phase"] = "phase"
    id: str = ""
    phase: Phase
    elapsed_s: float = 0.0
    task_running: bool = Field(
        default=False,
        description="The trusted process is waiting on the task's own code (its import, "
        "get_inputs or Model.forward): a time limit reached now is the task's.",
    )


class ProcessExit(BaseModel):
    """How a candidate or task process ended, as its parent saw it."""

    exit_code: int | None = None
    signal: str | None = None


class ChildOutcome(BaseModel):
    """How a job ended, as its worker saw it."""

    end: Literal["reported", "crashed", "timeout", "cancelled"]
    report: dict[str, Any] | None = None
    last_phase: Phase = Phase.COMPILING
    task_running: bool = Field(
        default=False, description="The task's own code was running when the job ended."
    )
    exit_code: int | None = Field(default=None, description="The trusted process's, if it died.")
    signal: str | None = None
    elapsed_s: float = 0.0
    startup_s: float = 0.0
    output_tail: str | None = Field(default=None, description="The end of the candidate's output.")
    task_output_tail: str | None = Field(default=None, description="The end of the task's output.")
    judge_output_tail: str | None = Field(
        default=None, description="The trusted process's own error output, when it failed."
    )
    candidate_exit: ProcessExit | None = None
    task_exit: ProcessExit | None = None
    output_limit_hit: bool = Field(
        default=False, description="The candidate printed more than the output limit."
    )
    sandbox: SandboxReport | None = Field(
        default=None, description="What the sandbox of the user-code processes enforced."
    )
    note: str | None = Field(default=None, description="What the pool saw, when no worker could.")


class DoneMessage(BaseModel):
    type: Literal["done"] = "done"
    id: str
    outcome: ChildOutcome


class ReportMessage(BaseModel):
    """Sent once by the trusted process of a job: its result."""

    type: Literal["report"] = "report"
    report: dict[str, Any]


FromWorker = Annotated[
    ReadyMessage | PhaseMessage | DoneMessage | ReportMessage, Field(discriminator="type")
]

to_worker: TypeAdapter[ToWorker] = TypeAdapter(ToWorker)
from_worker: TypeAdapter[FromWorker] = TypeAdapter(FromWorker)
