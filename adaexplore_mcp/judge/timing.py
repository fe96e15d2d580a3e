"""Timing a callable on a GPU with CUDA events. Runs inside the sandboxed child.

The timed calls are queued back to back, each as: flush the L2 cache (write a buffer larger
than it), start event, the call, end event; the device is synchronized once at the end. The
host enqueues ahead of the GPU, so its launch latency and jitter stay out of the events unless
the call's host work is longer than its GPU work (then the gaps are real cost and are timed).
A few calls are also timed by the host clock with the device synchronized around each: work the
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
    """Empties the L2 cache by writing a buffer larger than it."""

    def __init__(self, device: torch.device, settings: TimingSettings) -> None:
        props = torch.cuda.get_device_properties(device)
        l2_bytes = getattr(props, "L2_cache_size", 0) or 64 * 1024 * 1024
        size = int(l2_bytes * settings.l2_flush_factor) // 4
        self.buffer = torch.empty(size, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        self.buffer.zero_()


def measure(fn: Callable[[], object], settings: TimingSettings, flush: L2Flusher) -> Measurement:
    """Warm up, pick a run count that accumulates ``target_ms`` of kernel time, measure."""
    # warm-up, also an estimate of one call's cost
    warm_start = time.perf_counter()
    warm_runs = 0
    while warm_runs < 3 or (time.perf_counter() - warm_start) * 1e3 < settings.warmup_ms:
        fn()
        torch.cuda.synchronize()
        warm_runs += 1
        if warm_runs >= settings.max_runs:
            break
    estimate_ms = (time.perf_counter() - warm_start) * 1e3 / warm_runs
    runs = math.ceil(settings.target_ms / max(estimate_ms, 1e-3))
    runs = max(settings.min_runs, min(settings.max_runs, runs))

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    torch.cuda.synchronize()
    for start, end in zip(starts, ends, strict=True):
        flush()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    event_ms = [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]

    wall_ms = []
    for _ in range(min(runs, settings.wall_runs)):
        flush()
        torch.cuda.synchronize()
        wall_start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        wall_ms.append((time.perf_counter() - wall_start) * 1e3)
    return Measurement(events=stats(event_ms), wall=stats(wall_ms))
