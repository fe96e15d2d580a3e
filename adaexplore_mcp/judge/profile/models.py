"""What a profile answers, and the job the profiled process receives."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from adaexplore_mcp.tasks.model import ShapeValue

BoundBy = Literal["memory", "compute", "latency"]

NOTE = (
    "Informational, never a verdict: Nsight Compute serializes and replays each launch to read "
    "its counters, and the profiled process runs your code unchecked, so these numbers explain "
    "a kernel's time but do not judge it; evaluate_kernel decides correctness and speed."
)

KERNEL_NAME_CHARS = 120
MAX_KERNELS = 20


class KernelProfile(BaseModel):
    """One kernel (all its launches in the profiled calls), its decisive metrics."""

    name: str = Field(description=f"The kernel's name, cut to {KERNEL_NAME_CHARS} characters.")
    calls: int = Field(description="Launches in the profiled calls of forward.")
    total_us: float = Field(description="GPU time of all its launches (gpu__time_duration).")
    mean_us: float
    share: float = Field(description="Its fraction of the profiled GPU time of every kernel.")
    sm_pct: float | None = Field(
        description="Compute (SM) throughput, % of peak (sm__throughput), time-weighted."
    )
    memory_pct: float | None = Field(
        description="Memory throughput, % of peak of the busiest memory unit "
        "(gpu__compute_memory_throughput), time-weighted."
    )
    dram_pct: float | None = Field(description="DRAM bandwidth, % of peak (dram__throughput).")
    occupancy_pct: float | None = Field(
        description="Achieved occupancy: active warps, % of the most an SM holds "
        "(sm__warps_active)."
    )
    l2_hit_pct: float | None = Field(description="L2 hit rate (lts__t_sector_hit_rate).")
    registers_per_thread: int | None = Field(description="Of its longest launch.")
    shared_mem_per_block: int | None = Field(description="Bytes, of its longest launch.")
    grid_size: int | None = Field(description="Blocks, of its longest launch.")
    block_size: int | None = Field(description="Threads a block, of its longest launch.")
    bound_by: BoundBy = Field(
        description="memory or compute: that unit is the busier one and near its peak; "
        "latency: neither is (too few blocks or warps, waits, launch overhead)."
    )
    hint: str = Field(description="One line: what bounds it and what usually helps.")


class ProfileReport(BaseModel):
    """``profile_kernel``: the longest kernels of a few calls of forward under Nsight Compute."""

    task: str
    device: str = Field(description="Where it ran, as the judge names devices (cuda:N).")
    compute_capability: str | None
    profiled_calls: int = Field(description="Calls of forward inside the profiled range.")
    launches: int = Field(description="Kernel launches recorded in them.")
    distinct_kernels: int
    total_us: float = Field(description="GPU time of every recorded launch.")
    kernels: list[KernelProfile] = Field(description="The longest kernels first.")
    omitted_kernels: int = Field(description="Kernels left out beyond `top`.")
    note: str = NOTE


class ProfileJob(BaseModel):
    """What the profiled process runs: the task's benchmark shape, the candidate, how often."""

    task_source: str
    code: str
    device: str = Field(description="'cuda' (the one GPU the process sees) or 'cpu'.")
    overrides: dict[str, ShapeValue] = Field(default_factory=dict)
    seed: int = 0
    warmup_calls: int = Field(ge=1)
    profiled_calls: int = Field(ge=1)
