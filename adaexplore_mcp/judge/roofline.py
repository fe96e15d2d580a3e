"""Speed of light: a kernel's median time against what the GPU's measured limits allow for the
task's work, and the one line an agent reads of it.

Pure arithmetic on numbers the trusted process already holds, so it runs (and is tested)
anywhere. The FLOP count comes from the task's process, which runs user code: it is checked
here before anything divides by it.
"""

from __future__ import annotations

import math

from adaexplore_mcp.judge.measurement import KernelTime, SpeedOfLight, TaskWork
from adaexplore_mcp.judge.result import EvalResult

# More than any call the judge would time: 1e17 FLOPs is over a minute at a PFLOP/s.
MAX_FLOPS = 1e17
TOP_LAUNCHES = 3
_NAME_CHARS = 40


def usable_flops(value: float | None) -> tuple[float | None, str | None]:
    """The task's FLOP count if it can be one, else None and why it was dropped."""
    if value is None:
        return None, "the task's process sent no FLOP count"
    if not math.isfinite(value) or value < 0 or value > MAX_FLOPS:
        return None, (
            f"the task's process sent {value!r} FLOPs, which is not a count of one call "
            f"(0 to {MAX_FLOPS:.0e}); dropped"
        )
    return value, None


def speed_of_light(
    work: TaskWork,
    *,
    median_ms: float,
    bandwidth: float,
    peak_flops: float | None,
    peak_math: str,
) -> SpeedOfLight:
    """``bandwidth`` in bytes a second, ``peak_flops`` in FLOP a second (None: not measured)."""
    seconds = max(median_ms, 1e-9) / 1e3
    flops = work.flops
    achieved_flops = flops / seconds if flops is not None else None
    compute_fraction = (
        achieved_flops / peak_flops if achieved_flops is not None and peak_flops else None
    )
    # the roofline: whichever of moving the bytes or doing the FLOPs takes longer at peak
    memory_s = work.bytes / bandwidth
    compute_s = flops / peak_flops if flops is not None and peak_flops else 0.0
    return SpeedOfLight(
        flops=flops,
        bytes=work.bytes,
        achieved_gb_s=work.bytes / seconds / 1e9,
        achieved_tflop_s=achieved_flops / 1e12 if achieved_flops is not None else None,
        peak_gb_s=bandwidth / 1e9,
        peak_tflop_s=peak_flops / 1e12 if peak_flops else None,
        peak_math=peak_math,
        bandwidth_fraction=work.bytes / seconds / bandwidth,
        compute_fraction=compute_fraction,
        bound="compute" if compute_s > memory_s else "memory",
    )


def speed_of_light_line(result: EvalResult, *, launches: bool = False) -> str | None:
    """One line: the fraction of the binding limit, and the task's work (on the CPU, the work
    alone). ``launches``: the longest launches too, for answers that do not list them."""
    timing = result.timing if result.timing_meaningful else None
    sol = timing.speed_of_light if timing is not None else None
    if sol is None:
        work = result.work
        if work is None:
            return None
        return f"task work: {_work(work.flops, work.bytes)} (no GPU clock: no speed of light)"
    if sol.bound == "compute" and sol.compute_fraction is not None and sol.peak_tflop_s:
        head = (
            f"{sol.compute_fraction:.0%} of {sol.peak_tflop_s:.3g} TFLOP/s ({sol.peak_math}), "
            f"compute-bound; memory {sol.bandwidth_fraction:.0%} of {_rate(sol.peak_gb_s)}"
        )
    else:
        head = f"{sol.bandwidth_fraction:.0%} of {_rate(sol.peak_gb_s)}, memory-bound"
        if sol.compute_fraction is not None and sol.peak_tflop_s:
            head += f"; compute {sol.compute_fraction:.0%} of {sol.peak_tflop_s:.3g} TFLOP/s"
    line = f"{head}; task work: {_work(sol.flops, sol.bytes)}"
    if launches and timing is not None and timing.kernels:
        line += "; top launches: " + launch_list(timing.kernels)
    return line


def launch_list(kernels: list[KernelTime], top: int = TOP_LAUNCHES) -> str:
    """The longest launches, names cut to a readable length."""
    parts = []
    for kernel in kernels[:top]:
        name = kernel.name if len(kernel.name) <= _NAME_CHARS else kernel.name[:_NAME_CHARS] + "…"
        parts.append(f"{name} {kernel.ms:.3g} ms ×{kernel.launches}")
    return ", ".join(parts)


def _work(flops: float | None, nbytes: int) -> str:
    counted = f"{_si(flops)}FLOP" if flops is not None else "FLOPs unknown"
    return f"{counted}, {_si(nbytes)}B"


def _rate(gb_s: float) -> str:
    return f"{gb_s / 1e3:.3g} TB/s" if gb_s >= 1e3 else f"{gb_s:.3g} GB/s"


def _si(value: float) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}"
    return f"{value:.3g} "
