"""What the judge returns: ``EvalResult`` and the models it is made of."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field, computed_field

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


class RuntimeStats(BaseModel):
    """Milliseconds per call of forward, over ``n`` timed runs (L2 flushed before each)."""

    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    n: int


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


class KernelTime(BaseModel):
    """One kernel of the candidate's forward, as the profiler in its process saw it."""

    name: str
    triton: bool = Field(description="Launched by a Triton kernel of the candidate.")
    launches: int = Field(description="Launches per call of forward.")
    ms: float = Field(description="GPU time per call of forward.")


class TaskWork(BaseModel):
    """What one call of forward on a shape must do at the least, whatever kernel does it."""

    variant: str = Field(description="The shape counted, e.g. 'benchmark (batch_size=4096)'.")
    flops: float | None = Field(
        description="The task's count: matmul (matrix-vector too), convolution and attention "
        "FLOPs of one reference forward, counted by torch's FlopCounterMode in the task's "
        "process (elementwise work counts 0). None when the count was not usable (see note)."
    )
    bytes: int = Field(
        ge=0,
        description="Inputs, outputs and parameters of one call, sized by the judge from what it "
        "generated and received: what any kernel must read or write once (of the inputs and "
        "parameters, the part the task's READ_FRACTION says a kernel must read).",
    )
    note: str | None = Field(default=None, description="Why flops is None, when it is.")


Bound = Literal["memory", "compute"]


class SpeedOfLight(BaseModel):
    """The kernel's median time against the GPU's measured limits (``docs/integrity.md``,
    "Speed of light"): how close it came, and which limit binds the task."""

    flops: float | None = Field(description="TaskWork.flops (the task's count).")
    bytes: int = Field(ge=0, description="TaskWork.bytes (the judge's sizing).")
    achieved_gb_s: float = Field(description="bytes / median runtime, in 1e9 bytes a second.")
    achieved_tflop_s: float | None = Field(description="flops / median runtime, in 1e12 a second.")
    peak_gb_s: float = Field(
        description="Device-to-device copy bandwidth, measured by the judge at this timing."
    )
    peak_tflop_s: float | None = Field(
        description="A large torch matmul in peak_math, the highest the judge measured on this "
        "GPU (once per math)."
    )
    peak_math: str = Field(
        description="The dtype and math mode of that matmul: the task's widest floating dtype, "
        "with TF32 allowed only where the precision policy allows it."
    )
    bandwidth_fraction: float = Field(description="achieved_gb_s / peak_gb_s.")
    compute_fraction: float | None = Field(description="achieved_tflop_s / peak_tflop_s.")
    bound: Bound = Field(
        description="The limit that takes longer at peak for this task's work: 'memory' when "
        "moving its bytes does, 'compute' when its FLOPs do."
    )

    @property
    def fraction(self) -> float:
        """The fraction of the binding limit the kernel reached."""
        if self.bound == "compute" and self.compute_fraction is not None:
            return self.compute_fraction
        return self.bandwidth_fraction


class TimingDetail(BaseModel):
    """How ``runtime`` was measured (``docs/integrity.md``, "The clock")."""

    method: str = "gated-calls-v4"
    calls_per_span: int = Field(description="Calls of forward inside one timed span.")
    spans: int
    handoff_ms: float = Field(
        description="The GPU's handoff between the judge's and the candidate's processes, "
        "measured with a trusted null subject and subtracted from every call."
    )
    null_offset_ms: float | None = Field(
        default=None,
        description="Included in handoff_ms: how much a new GPU context's handoff read beyond "
        "the null subject's, measured against a panel of new trusted processes when the "
        "worker started (None: not measured).",
    )
    context_scatter_ms: float | None = Field(
        default=None,
        description="How far new GPU contexts' handoffs lay from each other (standard "
        "deviation over that panel). The candidate runs in a new context every evaluation, "
        "and its own offset is not known: two evaluations of the same kernel differ by about "
        "this much a call even when nothing else changes, so runtimes closer than two or "
        "three times this are a tie (None: not measured).",
    )
    fill_excess_ms: float = Field(
        default=0.0,
        description="Median per span: GPU time the candidate's process held while the judge "
        "copied the span's inputs in (its gate still closed), beyond what the null subject's "
        "calibration took. What exceeds the allowance (settings: timing.fill_allowance_ms, "
        "0.05 ms) is charged to the calls.",
    )
    held_ms: float = Field(
        default=0.0,
        description="Median per span: GPU time the candidate's process took while the judge "
        "held the GPU waiting for it to enqueue its calls (work on streams the gate does not "
        "hold), beyond the calibration's. Charged with fill_excess_ms beyond the allowance.",
    )
    settled_ms: float = Field(
        default=0.0,
        description="Median per span: GPU time other processes took after the span, while the "
        "judge waited, the job's processes stopped, for the GPU to be quiet before timing its "
        "null subject. Not charged; work the kernel left running shows here.",
    )
    synchronizing: bool = Field(
        default=False,
        description="forward waited on the GPU itself, so its host time is inside the spans.",
    )
    host: RuntimeStats | None = Field(
        default=None,
        description="Per call, the host time the candidate's process took to launch forward "
        "(the judge's clock; includes one message each way per span).",
    )
    kernels: list[KernelTime] = Field(
        default_factory=list, description="Per-launch breakdown from the profiler, longest first."
    )
    profiled_ms: float | None = Field(
        default=None, description="The profiler's sum of kernel time per call (a cross-check)."
    )
    triton_share: float | None = Field(
        default=None, description="Fraction of the profiled GPU time spent in Triton kernels."
    )
    speed_of_light: SpeedOfLight | None = Field(
        default=None,
        description="The median against the GPU's measured bandwidth and matmul peak.",
    )


class WorkSplit(BaseModel):
    """Where one profiled call of forward on the main shape spent its time: in the candidate's
    Triton kernels, or in the library's (cuBLAS, cuDNN and torch's own kernels)."""

    measured_on: Literal["gpu", "cpu"] = Field(
        description="'gpu': kernel time on the GPU. 'cpu': host time in Triton's interpreter "
        "against torch's operators, which says which did work, not how fast it would be."
    )
    triton_ms: float = Field(ge=0)
    library_ms: float = Field(ge=0)
    library_ops: dict[str, int] = Field(
        default_factory=dict,
        description="The torch operators forward computed with (beyond allocation, views and "
        "copies), per call; empty under the triton policy, which rejects them.",
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def triton_share(self) -> float | None:
        """Fraction of the profiled time spent in Triton kernels."""
        total = self.triton_ms + self.library_ms
        return self.triton_ms / total if total > 0 else None


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
    message: str = Field(description="One short, actionable paragraph for the agent.")
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
