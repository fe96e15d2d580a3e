"""The reward of a judged kernel: bounded in [0, 1], failures below every correct kernel, correct
kernels ranked against the fastest one in the same search.

Failures get fixed values that rise with how far the kernel got (compile error < runtime error
< incorrect). A correct kernel gets ``floor + (1 - floor) * (best_ms / ms) ** sharpness``, where
``ms`` is its median runtime over every measurement and ``best_ms`` the lowest such median in the
search. Relative to the search's best, because what selection must tell apart are the kernels
near the leader: against a fixed baseline 0.88x and 1.08x are a few hundredths apart, here the
leader scores 1 and a kernel 20% slower about 0.6. The reward is therefore not stored: it moves
whenever the best does, and the tree derives it from the measured runtimes when it is read.
"""

from __future__ import annotations

from adaexplore_mcp.judge.result import EvalResult, Status
from adaexplore_mcp.search_engine.settings import SearchSettings


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


def failure_reward(status: Status, settings: SearchSettings) -> float:
    """The fixed reward of a verdict other than correct."""
    failures = {
        Status.COMPILE_ERROR: settings.reward_compile_error,
        Status.RUNTIME_ERROR: settings.reward_runtime_error,
        Status.TIMEOUT: settings.reward_timeout,
        Status.INCORRECT: settings.reward_incorrect,
        Status.REJECTED: settings.reward_rejected,
    }
    if status not in failures:
        raise ValueError(f"{status.value} is not a failure: use correct_reward")
    return failures[status]


def correct_reward(
    runtime_ms: float | None, best_ms: float | None, settings: SearchSettings
) -> float:
    """A correct kernel's reward against the search's fastest correct kernel (``best_ms``).

    Without timings anywhere in the search (the CPU interpreter) correct kernels cannot be told
    apart and all score 1. In a timed search, a kernel without a meaningful timing scores the
    floor: nothing shows it is fast."""
    floor = settings.reward_correct_floor
    if best_ms is None:
        return 1.0
    if runtime_ms is None or runtime_ms <= 0:
        return floor
    ratio = min(1.0, best_ms / runtime_ms)
    return floor + (1.0 - floor) * ratio**settings.reward_sharpness
