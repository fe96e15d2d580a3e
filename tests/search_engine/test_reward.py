import itertools

import pydantic
import pytest

from adaexplore_mcp.judge.result import Status
from adaexplore_mcp.search_engine.reward import correct_reward, failure_reward
from adaexplore_mcp.search_engine.settings import SearchSettings

SETTINGS = SearchSettings()
BEST_MS = 10.0


def test_failures_rank_below_every_correct_kernel_and_by_how_far_they_got():
    compile_error = failure_reward(Status.COMPILE_ERROR, SETTINGS)
    runtime_error = failure_reward(Status.RUNTIME_ERROR, SETTINGS)
    incorrect = failure_reward(Status.INCORRECT, SETTINGS)
    slowest = correct_reward(BEST_MS * 1000, BEST_MS, SETTINGS)
    assert compile_error < runtime_error < incorrect < slowest
    assert failure_reward(Status.REJECTED, SETTINGS) <= compile_error
    assert failure_reward(Status.TIMEOUT, SETTINGS) < slowest
    with pytest.raises(ValueError, match="not a failure"):
        failure_reward(Status.CORRECT, SETTINGS)


def test_correct_kernels_fall_with_runtime_from_1_at_the_best_and_stay_above_the_floor():
    runtimes = [BEST_MS * factor for factor in (1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 10.0, 100.0)]
    rewards = [correct_reward(ms, BEST_MS, SETTINGS) for ms in runtimes]
    assert rewards[0] == 1.0
    assert all(a > b for a, b in itertools.pairwise(rewards))  # strictly falling
    assert all(SETTINGS.reward_correct_floor < r <= 1 for r in rewards)


def test_kernels_near_the_best_are_told_apart():
    # the search: eager-relative 0.879x and 0.93x against a 1.078x leader, which the
    # log-speedup reward scored 0.630, ~0.64 and 0.661
    leader, middle, dominated = (
        correct_reward(10 / s, 10 / 1.078, SETTINGS) for s in (1.078, 0.93, 0.879)
    )
    assert leader == 1.0
    assert leader - middle > 0.25 and middle - dominated > 0.05


def test_sharpness_sets_how_fast_slower_kernels_fall_off():
    gentle = SearchSettings(reward_sharpness=1.0)
    assert correct_reward(20.0, BEST_MS, gentle) == pytest.approx(0.3 + 0.7 / 2)
    assert correct_reward(20.0, BEST_MS, SETTINGS) == pytest.approx(0.3 + 0.7 / 16)


def test_without_timings_correct_kernels_cannot_be_ranked():
    assert correct_reward(None, None, SETTINGS) == 1.0  # no timing anywhere: all alike
    # in a timed search a kernel without a meaningful timing is not shown to be fast
    assert correct_reward(None, BEST_MS, SETTINGS) == SETTINGS.reward_correct_floor


def test_settings_refuse_a_failure_rewarded_above_a_correct_kernel():
    with pytest.raises(pydantic.ValidationError, match="rewards must rise"):
        SearchSettings(reward_incorrect=0.5)
    with pytest.raises(pydantic.ValidationError, match="rewards must rise"):
        SearchSettings(reward_compile_error=0.08)
