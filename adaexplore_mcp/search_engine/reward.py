"""The reward of a judged kernel: bounded in [0, 1], failures below every correct kernel.

Failures get fixed values that rise with how far the kernel got (compile error < runtime error
< incorrect). A correct kernel gets ``floor + (1 - floor) * (1 + u) / 2`` with
``u = clip(log(speedup) / log(cap), -1, 1)``: log-speedup, because a 2x gain matters as much at 4x
as at 1x, and clipped so one outlier measurement cannot dominate the mean rewards UCT compares.
"""

from __future__ import annotations

import math

from adaexplore_mcp.config import SearchSettings
from adaexplore_mcp.judge.result import EvalResult, Status


def speedup_of(result: EvalResult, settings: SearchSettings) -> float | None:
    """The measured speedup against the configured baseline; None when not measured."""
    if result.status is not Status.CORRECT or not result.timing_meaningful:
        return None
    value = result.speedup_eager if settings.speedup_baseline == "eager" else result.speedup_compile
    return value if value is not None and value > 0 else None


def runtime_of(result: EvalResult) -> float | None:
    """The median runtime in ms, when it is meaningful (not on the CPU interpreter)."""
    if result.runtime is None or not result.timing_meaningful:
        return None
    return result.runtime.median_ms


def reward_of(result: EvalResult, settings: SearchSettings) -> float:
    failures = {
        Status.COMPILE_ERROR: settings.reward_compile_error,
        Status.RUNTIME_ERROR: settings.reward_runtime_error,
        Status.TIMEOUT: settings.reward_timeout,
        Status.INCORRECT: settings.reward_incorrect,
        Status.REJECTED: settings.reward_rejected,
    }
    if result.status in failures:
        return failures[result.status]
    return correct_reward(speedup_of(result, settings), settings)


def correct_reward(speedup: float | None, settings: SearchSettings) -> float:
    """A correct kernel's reward; without a meaningful timing (the CPU interpreter) it counts as
    ``unmeasured_speedup`` (default 1: as fast as the baseline)."""
    value = settings.unmeasured_speedup if speedup is None else speedup
    u = max(-1.0, min(1.0, math.log(value) / math.log(settings.speedup_cap)))
    floor = settings.reward_correct_floor
    return floor + (1.0 - floor) * (1.0 + u) / 2.0
