"""Timing a callable on a GPU with CUDA events. Runs inside the sandboxed child.

Each timed call: the device is synchronized; the L2 cache is flushed by writing a buffer larger
than it; the GPU spins for ``launch_allowance_us`` while the host enqueues the call; then start
event, the call, end event, and the device is synchronized again. The spin keeps the host's
launch latency, and its jitter, out of the events, so they measure the GPU work of the call
(host work longer than the allowance still shows up as idle GPU time). The wall-clock time of
each call (host, from before the flush to after the final synchronize) is kept too: work the
call hides on another stream or thread shows up there and not in the events.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from adaexplore_mcp.config import TimingSettings
from adaexplore_mcp.judge.result import RuntimeStats


@dataclass
class Measurement:
    events: RuntimeStats
    wall: RuntimeStats
    warmup_s: float = 0.0  # spent running the call during warm-up


def stats(samples_ms: list[float]) -> RuntimeStats:
    return RuntimeStats(
        median_ms=statistics.median(samples_ms),
        mean_ms=statistics.fmean(samples_ms),
        std_ms=statistics.pstdev(samples_ms) if len(samples_ms) > 1 else 0.0,
        min_ms=min(samples_ms),
        max_ms=max(samples_ms),
        n=len(samples_ms),
    )


class L2Flusher:
    """Empties the L2 cache, then keeps the GPU busy for the launch allowance."""

    def __init__(self, device: torch.device, settings: TimingSettings) -> None:
        props = torch.cuda.get_device_properties(device)
        l2_bytes = getattr(props, "L2_cache_size", 0) or 64 * 1024 * 1024
        size = int(l2_bytes * settings.l2_flush_factor) // 4
        self.buffer = torch.empty(size, dtype=torch.int32, device=device)
        self.spin_cycles = _cycles_for(settings.launch_allowance_us)

    def __call__(self) -> None:
        self.buffer.zero_()
        if self.spin_cycles:
            torch.cuda._sleep(self.spin_cycles)


def _cycles_for(microseconds: float) -> int:
    """GPU clock cycles that ``torch.cuda._sleep`` needs to spin for ``microseconds``."""
    if microseconds <= 0 or not hasattr(torch.cuda, "_sleep"):
        return 0
    probe_cycles = 1_000_000
    torch.cuda._sleep(probe_cycles)  # warm the kernel and the clocks
    best_ms = math.inf
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(probe_cycles)
        end.record()
        end.synchronize()
        best_ms = min(best_ms, start.elapsed_time(end))
    return int(probe_cycles * microseconds / (best_ms * 1e3))


def measure(
    fn: Callable[[], object],
    settings: TimingSettings,
    flush: L2Flusher,
    *,
    before: Callable[[int], None] | None = None,
    after: Callable[[int, object], None] | None = None,
) -> Measurement:
    """Warm up, pick a run count that accumulates ``target_ms`` of kernel time, measure.

    ``before(i)`` runs ahead of the i-th timed call and ``after(i, output)`` once it has
    finished, both outside the timed span (the integrity checks use them)."""
    # warm-up, also an estimate of one call's cost
    warm_start = time.perf_counter()
    warm_runs = 0
    while warm_runs < 3 or (time.perf_counter() - warm_start) * 1e3 < settings.warmup_ms:
        fn()
        torch.cuda.synchronize()
        warm_runs += 1
        if warm_runs >= settings.max_runs:
            break
    warmup_s = time.perf_counter() - warm_start
    estimate_ms = warmup_s * 1e3 / warm_runs
    runs = math.ceil(settings.target_ms / max(estimate_ms, 1e-3))
    runs = max(settings.min_runs, min(settings.max_runs, runs))

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    wall_ms = []
    for index, (start, end) in enumerate(zip(starts, ends, strict=True)):
        if before is not None:
            before(index)
        torch.cuda.synchronize()
        wall_start = time.perf_counter()
        flush()
        start.record()
        output = fn()
        end.record()
        torch.cuda.synchronize()
        wall_ms.append((time.perf_counter() - wall_start) * 1e3)
        if after is not None:
            after(index, output)
        del output
    event_ms = [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
    return Measurement(events=stats(event_ms), wall=stats(wall_ms), warmup_s=warmup_s)


def work_after_return_ms(fn: Callable[[], object], flush: L2Flusher, runs: int = 7) -> float:
    """Median time the GPU stays busy after the call's own stream has finished: near zero
    unless the call left work on another stream, which the events would not see."""
    gaps = []
    for _ in range(runs):
        torch.cuda.synchronize()
        flush()
        fn()
        done = torch.cuda.Event()
        done.record()
        done.synchronize()
        started = time.perf_counter()
        torch.cuda.synchronize()
        gaps.append((time.perf_counter() - started) * 1e3)
    return statistics.median(gaps)


def device_bandwidth(device: torch.device, size_mb: int = 256) -> float:
    """Bytes per second the GPU copies device to device (each copy reads and writes the
    buffer), the best of a few runs: the fastest any kernel can read its inputs."""
    count = size_mb * 2**20 // 4
    source = torch.empty(count, dtype=torch.int32, device=device)
    target = torch.empty_like(source)
    target.copy_(source)
    best_s = math.inf
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        target.copy_(source)
        end.record()
        end.synchronize()
        best_s = min(best_s, start.elapsed_time(end) / 1e3)
    return 2 * count * 4 / best_s
