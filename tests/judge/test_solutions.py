"""Every bundled Triton solution passes the judge in the CPU interpreter (no false negatives)."""

import pytest

from adaexplore_mcp.judge import Status
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task, solution_names


@pytest.mark.parametrize("name", solution_names())
def test_bundled_solution_is_correct(cpu_judge, name):
    result = cpu_judge.evaluate(get_bundled_task(name), bundled_solution(name), timeout_s=300)
    assert result.status is Status.CORRECT, f"{name}: {result.message}\n{result.output_tail}"
    assert result.correctness.trials_passed >= 4  # the main shape's trials and an odd shape
