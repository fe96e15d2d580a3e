import math

import pydantic
import pytest

from adaexplore_mcp.config import SearchSettings
from adaexplore_mcp.judge.result import EvalResult, RuntimeStats, Status
from adaexplore_mcp.search_engine import reward_of
from adaexplore_mcp.search_engine.reward import correct_reward

SETTINGS = SearchSettings()


def result(status: Status, speedup: float | None = None, *, timed: bool = True) -> EvalResult:
    runtime = None
    if speedup is not None:
        ms = 10 / speedup
        runtime = RuntimeStats(median_ms=ms, mean_ms=ms, std_ms=0, min_ms=ms, max_ms=ms, n=30)
    return EvalResult(
        status=status,
        message="",
        task="t",
        task_hash="h",
        kernel_hash="k",
        runtime=runtime,
        speedup_eager=speedup,
        speedup_compile=None if speedup is None else speedup / 2,
        timing_meaningful=timed and speedup is not None,
    )


def test_failures_rank_below_every_correct_kernel_and_by_how_far_they_got():
    compile_error = reward_of(result(Status.COMPILE_ERROR), SETTINGS)
    runtime_error = reward_of(result(Status.RUNTIME_ERROR), SETTINGS)
    incorrect = reward_of(result(Status.INCORRECT), SETTINGS)
    slowest = reward_of(result(Status.CORRECT, 0.001), SETTINGS)
    assert compile_error < runtime_error < incorrect < slowest
    assert reward_of(result(Status.REJECTED), SETTINGS) <= compile_error
    assert reward_of(result(Status.TIMEOUT), SETTINGS) < slowest


def test_correct_kernels_rise_with_speedup_and_stay_bounded():
    speedups = [0.01, 0.1, 0.5, 1.0, 1.5, 2.0, 5.0, 10.0, 1000.0]
    rewards = [reward_of(result(Status.CORRECT, s), SETTINGS) for s in speedups]
    assert rewards == sorted(rewards)
    assert rewards[0] == SETTINGS.reward_correct_floor and rewards[-1] == 1.0
    assert all(0 <= r <= 1 for r in rewards)
    assert rewards[4] < rewards[5] < rewards[6]  # strictly rising inside the cap
    assert math.isclose(rewards[3], SETTINGS.reward_correct_floor + (1 - 0.3) / 2)


def test_a_correct_kernel_without_meaningful_timing_counts_as_the_baseline_speed():
    cpu = reward_of(result(Status.CORRECT), SETTINGS)
    assert cpu == correct_reward(1.0, SETTINGS)
    # a speedup the judge marks as not meaningful is ignored too
    assert reward_of(result(Status.CORRECT, 4.0, timed=False), SETTINGS) == cpu
    faster_guess = SearchSettings(unmeasured_speedup=2.0)
    assert reward_of(result(Status.CORRECT), faster_guess) > cpu


def test_the_baseline_is_configurable():
    against_compile = SearchSettings(speedup_baseline="compile")
    assert reward_of(result(Status.CORRECT, 4.0), against_compile) == correct_reward(2.0, SETTINGS)


def test_settings_refuse_a_failure_rewarded_above_a_correct_kernel():
    with pytest.raises(pydantic.ValidationError, match="rewards must rise"):
        SearchSettings(reward_incorrect=0.5)
    with pytest.raises(pydantic.ValidationError, match="rewards must rise"):
        SearchSettings(reward_compile_error=0.08)
