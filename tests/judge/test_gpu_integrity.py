"""The exploit regression suite on a GPU, where timing and streams are real. Skipped without
one (CI); run on the GPU machine with ``pytest -m gpu``."""

from __future__ import annotations

import pytest

from adaexplore_mcp.judge import Status
from adaexplore_mcp.tasks import get_bundled_task, parse_task

from .exploits import EXPLOITS, GPU_EXPLOITS, IDENTITY_TASK, Exploit, touching
from .test_gpu import _has_gpu, gpu_judge  # noqa: F401  (the module's GPU judge fixture)
from .test_integrity import assert_caught

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _has_gpu(), reason="needs a CUDA GPU")]

TASKS = {
    "softmax": get_bundled_task("softmax"),
    "identity": parse_task(IDENTITY_TASK, name="identity"),
}
# a cache keyed by pointer may already be caught while checking, when a trial's fresh input
# lands at a freed block's address
ALSO_ACCEPTED = {"result_cache_by_pointer": {"result_reuse"}}


@pytest.mark.parametrize("exploit", EXPLOITS + GPU_EXPLOITS, ids=lambda e: e.name)
def test_every_exploit_is_rejected_on_a_gpu(gpu_judge, exploit: Exploit):  # noqa: F811
    judge, _ = gpu_judge
    result = judge.evaluate(TASKS[exploit.task], exploit.code)
    also = ALSO_ACCEPTED.get(exploit.name, set())
    if result.integrity and result.integrity[0].check in also:
        return
    assert_caught(result, exploit)


def test_stale_memory_never_passes_on_a_gpu(gpu_judge):  # noqa: F811
    judge, _ = gpu_judge
    code = touching("torch.empty_like(x)")
    result = judge.evaluate(TASKS["softmax"], code)
    assert result.status is Status.INCORRECT, result.message


def test_the_network_is_isolated_on_the_gpu_machine(gpu_judge):  # noqa: F811
    from adaexplore_mcp.tasks import bundled_solution

    judge, _ = gpu_judge
    result = judge.evaluate(TASKS["softmax"], bundled_solution("softmax"))
    assert result.status is Status.CORRECT
    print("network isolated:", result.environment.network_isolated)
