"""What the judge measured of a kernel's time: the runtime's statistics (``RuntimeStats``), how
the clock took them (``TimingDetail``), the kernels' share of them (``KernelTime``,
``WorkSplit``), and how close they came to the GPU's limits (``TaskWork``, ``SpeedOfLight``).
Parts of ``result.EvalResult``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field


class RuntimeStats(BaseModel):
    """Milliseconds per call of forward, over ``n`` timed runs (L2 flushed before each)."""

    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    n: int


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
    calls_per_gate: int = Field(
        default=1,
        description="Calls of forward behind one gate, sharing its handoff (the fewest of any "
        "counted span; ``timing.calls_per_gate``).",
    )
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
