"""What the judge returns: ``EvalResult`` and the models it is made of."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from enum import StrEnum

from pydantic import BaseModel, Field

from adaexplore_mcp.judge.measurement import RuntimeStats, TaskWork, TimingDetail, WorkSplit
from adaexplore_mcp.judge.policy import Ops, Precision


class Status(StrEnum):
    CORRECT = "correct"
    INCORRECT = "incorrect"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    REJECTED = "rejected"


class Phase(StrEnum):
    QUEUED = "queued"
    COMPILING = "compiling"  # loading the module, building ModelNew, the first (JIT) call
    CHECKING = "checking"
    TIMING = "timing"
    DONE = "done"


# what an evaluation reports as it goes: the phase it entered and the seconds since it was asked
ProgressCallback = Callable[[Phase, float], None]


class ShapeError(BaseModel):
    shape: str
    inputs: int = Field(description="Elements in the shape's inputs.")
    rel_l2_error: float | None


class Mismatch(BaseModel):
    """The first check that failed, with enough detail to find the bug."""

    variant: str = Field(description="Shape variant, e.g. 'odd-1 (batch_size=7, dim=1000)'.")
    trial: int
    output_index: int = Field(description="Which output of forward (0 for a single tensor).")
    kind: str = Field(
        description="values | nonfinite | shape | dtype | count | type | input_modified"
    )
    expected_shape: list[int] | None = None
    actual_shape: list[int] | None = None
    expected_dtype: str | None = None
    actual_dtype: str | None = None
    numel: int | None = None
    mismatch_count: int | None = None
    nonfinite_count: int | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    rel_l2_error: float | None = Field(
        default=None, description="||actual-expected|| / ||expected||"
    )
    first_bad_index: list[int] | None = None
    expected_value: float | None = None
    actual_value: float | None = None
    atol: float | None = None
    rtol: float | None = None
    input_scale: float | None = Field(
        default=None,
        description="The float32 inputs of this input set were multiplied by this factor "
        "(the float32-range trial of the tf32 policy, docs/precision.md).",
    )
    reference_modifies_input: bool | None = Field(
        default=None,
        description="For input_modified: whether the task's reference writes to that input too "
        "(a task the judge cannot hold kernels to; its reference should work on a copy).",
    )
    errors_by_shape: list[ShapeError] | None = Field(
        default=None,
        description="When the error is the size rounding produces: the same output's relative "
        "L2 error on every shape, smallest inputs first (rounding error grows with the size).",
    )


class SkippedVariant(BaseModel):
    """A shape the judge derived from the task's sizes that the task's own reference cannot
    run: no kernel is asked to."""

    variant: str = Field(description="e.g. 'derived-odd (batch_size=65, dim=8193)'.")
    reason: str = Field(description="What the reference did: the error it raised, or NaN/Inf.")


class Correctness(BaseModel):
    trials_run: int = 0
    trials_passed: int = 0
    timed_calls_checked: int = Field(
        default=0, description="Timed calls whose output was checked too (every one of them)."
    )
    variants_checked: list[str] = Field(default_factory=list)
    variants_skipped: list[SkippedVariant] = Field(
        default_factory=list,
        description="Derived shapes not checked because the reference itself rejects them.",
    )
    max_abs_error: float | None = Field(default=None, description="Over every passed comparison.")
    max_rel_error: float | None = Field(
        default=None, description="Relative to max(|expected|, atol), over every passed comparison."
    )
    mismatch: Mismatch | None = None


class SandboxReport(BaseModel):
    """What the operating system enforced on the processes that ran the candidate and the task."""

    user_namespace: bool = False
    private_filesystem: bool = Field(
        default=False,
        description="A read-only view of the machine with the home directory, the judge's data, "
        "/tmp and /run hidden; writes go to a private working directory only.",
    )
    landlock: bool = Field(
        default=False, description="Writes confined by Landlock (no private filesystem view)."
    )
    network_isolated: bool = False
    pid_namespace: bool = Field(
        default=False, description="No other process of the machine is visible or reachable."
    )
    seccomp: bool = Field(
        default=False, description="A system-call filter (no ptrace, mounts, namespaces, ...)."
    )
    processes_allowed: bool = Field(
        default=True,
        description="Whether new processes may be started (a GPU needs Triton's compilers).",
    )
    notes: list[str] = Field(default_factory=list, description="What could not be set up.")


class Environment(BaseModel):
    device: str = Field(description="'cpu' or 'cuda:N' as the caller names it.")
    device_name: str
    capability: str | None = None
    interpreter: bool = Field(description="True when Triton ran in its CPU interpreter.")
    torch: str
    triton: str
    python: str
    network_isolated: bool = Field(
        default=False, description="The candidate ran in an empty network namespace."
    )
    sandbox: SandboxReport | None = None


class PhaseTimes(BaseModel):
    """Seconds spent in each phase of one evaluation."""

    queue_s: float = 0.0
    startup_s: float = Field(default=0.0, description="Process start, sandbox, CUDA context.")
    compile_s: float = 0.0
    check_s: float = 0.0
    timing_s: float = 0.0
    total_s: float = 0.0
    kernel_s: float = Field(
        default=0.0, description="Time spent inside the candidate's forward, first call excluded."
    )
    gpu_wait_s: float = Field(
        default=0.0,
        description="Of the checks and the timing, the time spent waiting for the GPU while "
        "other evaluations used it (their timing, or their checks and new processes while "
        "this one waited to time).",
    )


class IntegrityFlag(BaseModel):
    check: str
    detail: str


class ErrorDetail(BaseModel):
    type: str
    message: str
    phase: Phase
    location: str | None = Field(default=None, description="kernel.py:LINE of the last own frame.")
    traceback: str | None = Field(
        default=None, description="Trimmed to the candidate's own frames."
    )
    variant: str | None = Field(
        default=None, description="The shape of the call that failed, where one did."
    )
    signal: str | None = None
    exit_code: int | None = None


class EvalResult(BaseModel):
    status: Status
    precision: Precision = Field(
        default=Precision.STRICT,
        description="The precision policy the kernel was judged and its baselines timed under.",
    )
    ops: Ops = Field(
        default=Ops.TRITON,
        description="The operator policy the kernel was judged under: triton, or mixed "
        "(torch's library operators allowed beside Triton kernels that do real work).",
    )
    message: str = Field(
        description="One short, actionable paragraph for the agent (at most 4,000 characters)."
    )
    task: str
    task_hash: str
    kernel_hash: str
    correctness: Correctness = Field(default_factory=Correctness)
    runtime: RuntimeStats | None = None
    eager: RuntimeStats | None = None
    compiled: RuntimeStats | None = None
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    timing_meaningful: bool = False
    timing: TimingDetail | None = None
    work_split: WorkSplit | None = Field(
        default=None,
        description="Triton's time against the library's in a profiled call (when the judge "
        "profiled one): the figure that tells a fused epilogue from a decoy under mixed.",
    )
    work: TaskWork | None = Field(
        default=None,
        description="The task's FLOPs and bytes on the main shape (on the CPU too, where the "
        "main shape is the small one and nothing is timed).",
    )
    environment: Environment | None = None
    integrity: list[IntegrityFlag] = Field(default_factory=list)
    phases: PhaseTimes = Field(default_factory=PhaseTimes)
    error: ErrorDetail | None = None
    output_tail: str | None = Field(
        default=None, description="The end of what the candidate printed to stdout/stderr."
    )

    @property
    def ok(self) -> bool:
        return self.status is Status.CORRECT


class LintFinding(BaseModel):
    variant: str
    output_index: int | None = None
    check: str = Field(description="zeros | constant | input_independent | nonfinite | ...")
    detail: str


class LintReport(BaseModel):
    task: str
    task_hash: str
    variants: list[str]
    skipped: list[SkippedVariant] = Field(
        default_factory=list, description="Derived shapes the reference itself rejects."
    )
    findings: list[LintFinding]
    error: str | None = Field(default=None, description="The reference itself failed to run.")

    @property
    def ok(self) -> bool:
        return not self.findings and self.error is None


def kernel_hash(code: str) -> str:
    """Identifies a kernel's source in results and caches."""
    return hashlib.sha256(code.encode()).hexdigest()[:16]
