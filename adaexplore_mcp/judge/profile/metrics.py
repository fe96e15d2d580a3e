"""The few Nsight Compute metrics a profile reads, ncu's raw CSV page, and the summary per kernel.

``ncu --csv --page raw`` writes a header row of column names (the launch's identity first,
then the metric names, each rollup of a metric as its own column), a row of units, then one row
per profiled launch. Numbers may carry thousands separators ("41,728") and a metric ncu could
not collect reads "n/a".
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from dataclasses import dataclass

from adaexplore_mcp.judge.profile.models import (
    KERNEL_NAME_CHARS,
    MAX_KERNELS,
    BoundBy,
    KernelProfile,
)

DURATION = "gpu__time_duration.sum"
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
L2_HIT = "lts__t_sector_hit_rate.pct"
REGISTERS = "launch__registers_per_thread"
SHARED = "launch__shared_mem_per_block"
GRID = "launch__grid_size"
BLOCK = "launch__block_size"

METRICS = (DURATION, SM, MEMORY, DRAM, OCCUPANCY, L2_HIT, REGISTERS, SHARED, GRID, BLOCK)

_KERNEL_NAME = "Kernel Name"
_CAPABILITY = "CC"
_TIME_UNITS_US = {
    "ns": 1e-3,
    "nsecond": 1e-3,
    "us": 1.0,
    "usecond": 1.0,
    "ms": 1e3,
    "msecond": 1e3,
    "s": 1e6,
    "second": 1e6,
}
# a unit at least this busy bounds the kernel; below it on both, latency does
BUSY_PCT = 60.0


class CsvError(ValueError):
    """ncu's output is not the raw CSV page it was asked for."""


@dataclass(frozen=True)
class Launch:
    """One profiled launch."""

    kernel: str
    duration_us: float
    values: dict[str, float | None]
    capability: str | None


def parse_raw_csv(text: str) -> list[Launch]:
    """The launches of ncu's raw CSV page. Lines that are not CSV rows (ncu's own ``==PROF==``
    messages) are skipped."""
    rows = list(csv.reader(line for line in io.StringIO(text) if line.startswith('"')))
    if not rows:
        return []
    header = rows[0]
    if _KERNEL_NAME not in header or DURATION not in header:
        raise CsvError(
            f"ncu's CSV has no {_KERNEL_NAME!r} or {DURATION!r} column; its header starts "
            f"{', '.join(header[:6])}"
        )
    if len(rows) < 2:
        raise CsvError("ncu's CSV has a header but no row of units")
    column = {name: index for index, name in enumerate(header)}
    units = rows[1]
    scale = _TIME_UNITS_US.get(units[column[DURATION]].strip())
    if scale is None:
        raise CsvError(f"unknown unit {units[column[DURATION]]!r} of {DURATION}")
    launches = []
    for row in rows[2:]:
        if len(row) != len(header):
            raise CsvError(f"a row of {len(row)} fields under a header of {len(header)}")
        duration = _number(row[column[DURATION]])
        if duration is None:
            continue
        values = {name: _number(row[column[name]]) for name in METRICS[1:] if name in column}
        capability = row[column[_CAPABILITY]] if _CAPABILITY in column else None
        launches.append(
            Launch(row[column[_KERNEL_NAME]], duration * scale, values, capability or None)
        )
    return launches


def _number(text: str) -> float | None:
    cleaned = text.strip().replace(",", "")
    try:
        value = float(cleaned)
    except ValueError:
        return None  # "n/a", or empty
    return value if math.isfinite(value) else None


def summarize(launches: list[Launch], top: int) -> list[KernelProfile]:
    """Every kernel's launches together, the longest total first, at most ``top`` of them
    (and never more than ``MAX_KERNELS``: the answer's bound)."""
    top = max(1, min(top, MAX_KERNELS))
    by_name: dict[str, list[Launch]] = defaultdict(list)
    for launch in launches:
        by_name[launch.kernel].append(launch)
    total = sum(launch.duration_us for launch in launches)
    kernels = [_kernel(name, group, total) for name, group in by_name.items()]
    kernels.sort(key=lambda kernel: kernel.total_us, reverse=True)
    return kernels[:top]


def _kernel(name: str, launches: list[Launch], all_us: float) -> KernelProfile:
    total = sum(launch.duration_us for launch in launches)
    longest = max(launches, key=lambda launch: launch.duration_us)
    sm, memory = _weighted(launches, SM), _weighted(launches, MEMORY)
    bound = bound_by(sm, memory)
    return KernelProfile(
        name=_shortened(name),
        calls=len(launches),
        total_us=round(total, 3),
        mean_us=round(total / len(launches), 3),
        share=round(total / all_us, 4) if all_us > 0 else 0.0,
        sm_pct=sm,
        memory_pct=memory,
        dram_pct=_weighted(launches, DRAM),
        occupancy_pct=_weighted(launches, OCCUPANCY),
        l2_hit_pct=_weighted(launches, L2_HIT),
        registers_per_thread=_whole(longest.values.get(REGISTERS)),
        shared_mem_per_block=_whole(longest.values.get(SHARED)),
        grid_size=_whole(longest.values.get(GRID)),
        block_size=_whole(longest.values.get(BLOCK)),
        bound_by=bound,
        hint=hint(bound, sm, memory),
    )


def _weighted(launches: list[Launch], metric: str) -> float | None:
    """The metric's mean over the launches that have it, weighted by their time: a long
    launch says more about the kernel than a short one."""
    pairs = [
        (launch.duration_us, value)
        for launch in launches
        if (value := launch.values.get(metric)) is not None
    ]
    weight = sum(duration for duration, _ in pairs)
    if not pairs:
        return None
    if weight <= 0:
        return round(sum(value for _, value in pairs) / len(pairs), 2)
    return round(sum(duration * value for duration, value in pairs) / weight, 2)


def _whole(value: float | None) -> int | None:
    return None if value is None else round(value)


def _shortened(name: str) -> str:
    if len(name) <= KERNEL_NAME_CHARS:
        return name
    return name[: KERNEL_NAME_CHARS - 1] + "…"


def bound_by(sm_pct: float | None, memory_pct: float | None) -> BoundBy:
    """The busier of compute and memory when it is near its peak; latency when neither is."""
    sm, memory = sm_pct or 0.0, memory_pct or 0.0
    if max(sm, memory) < BUSY_PCT:
        return "latency"
    return "memory" if memory >= sm else "compute"


def hint(bound: BoundBy, sm_pct: float | None, memory_pct: float | None) -> str:
    figures = f"memory {_pct(memory_pct)}, SM {_pct(sm_pct)} of peak"
    if bound == "memory":
        return f"memory-bound ({figures}): move fewer bytes (fuse, reuse, narrower types)"
    if bound == "compute":
        return f"compute-bound ({figures}): do less arithmetic, or use tensor cores (tl.dot)"
    return (
        f"latency-bound ({figures}): neither unit is busy; more blocks or warps in flight, "
        "fewer launches, or more work per launch"
    )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}%"
