"""Calls behind one gate on a GPU (``timing.calls_per_gate``): an honest kernel is timed with
them, and one that writes every call into one buffer of its own gets a gate a call. Skipped
without a GPU (CI); run on the GPU machine with ``pytest -m gpu``."""

from __future__ import annotations

import pytest

from adaexplore_mcp.judge import LocalJudge, Status
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task

from ..conftest import SyncJudge
from .kernels import edited_solution
from .test_gpu import _has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _has_gpu(), reason="needs a CUDA GPU")]
SOFTMAX = get_bundled_task("softmax")
PER_GATE = 4

# The softmax solution writing every call of a shape into one buffer it keeps
ONE_BUFFER = edited_solution(
    "softmax",
    "        y = torch.empty_like(x2d)\n",
    "        if getattr(self, '_y', None) is None or self._y.shape != x2d.shape:\n"
    "            self._y = torch.empty_like(x2d)\n"
    "        y = self._y\n",
)


@pytest.fixture(scope="module")
def grouped_judge(loop_thread, tmp_path_factory):
    from adaexplore_mcp.judge.settings import JudgeSettings

    settings = JudgeSettings(
        device="cuda:0", timeout_s=600, workers_per_device=1, timing={"calls_per_gate": PER_GATE}
    )
    judge = LocalJudge(settings, home=tmp_path_factory.mktemp("gates-home"))
    loop_thread.run(judge.start())
    yield SyncJudge(loop_thread, judge)
    loop_thread.run(judge.close())


def test_an_honest_kernel_is_timed_with_its_calls_behind_shared_gates(grouped_judge):
    result = grouped_judge.evaluate(SOFTMAX, bundled_solution("softmax"), with_speedups=False)
    assert result.status is Status.CORRECT, result.message
    assert result.timing.calls_per_gate == PER_GATE
    assert result.timing.calls_per_span % PER_GATE == 0
    assert result.correctness.timed_calls_checked >= result.runtime.n


def test_a_kernel_writing_every_call_into_one_buffer_gets_a_gate_a_call(grouped_judge):
    """Behind a shared gate only the last call's outputs would be left to copy."""
    result = grouped_judge.evaluate(SOFTMAX, ONE_BUFFER, with_speedups=False)
    assert result.status is Status.CORRECT, result.message
    assert result.timing.calls_per_gate == 1
