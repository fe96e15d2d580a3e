"""The tf32 policy on a GPU: float32's range is checked in the timed calls too. Skipped on
machines without a CUDA GPU (CI); run on the GPU machine with ``pytest -m gpu``."""

from __future__ import annotations

import pytest
import torch

from adaexplore_mcp.judge import LocalJudge, Status
from adaexplore_mcp.judge.policy import Precision

from ..conftest import SyncJudge
from .test_precision import DEFAULT_OPERANDS, GEMM, GEMM_KERNEL

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

# float16 operands once the model has answered the calls the judge checks before timing (the
# main shape's model answers its checked calls first, then every timed one)
_EITHER = """\
        if HALF:
            acc = tl.dot(a.to(tl.float16), b.to(tl.float16), acc)
        else:
            acc = tl.dot(a, b, acc)"""
COUNTING = (
    GEMM_KERNEL.replace("OPERANDS", _EITHER)
    .replace("BLOCK: tl.constexpr):", "BLOCK: tl.constexpr, HALF: tl.constexpr):")
    .replace("    def forward(self, a, b):\n", "    calls = 0\n\n    def forward(self, a, b):\n")
    .replace(
        "        a, b = a.contiguous()", "        self.calls += 1\n        a, b = a.contiguous()"
    )
    .replace("BLOCK=16)", "BLOCK=16, HALF=self.calls > 12)")
)
assert "HALF=self.calls" in COUNTING and "self.calls += 1" in COUNTING


@pytest.fixture(scope="module")
def tf32_judge(loop_thread, tmp_path_factory):
    from adaexplore_mcp.judge.settings import JudgeSettings

    settings = JudgeSettings(device="cuda:0", timeout_s=600)
    judge = LocalJudge(settings, home=tmp_path_factory.mktemp("tf32-home"))
    loop_thread.run(judge.start())
    yield SyncJudge(loop_thread, judge)
    loop_thread.run(judge.close())


def test_a_tf32_gemm_passes_its_timed_calls_on_float32s_range(tf32_judge):
    honest = GEMM_KERNEL.replace("OPERANDS", DEFAULT_OPERANDS)
    result = tf32_judge.evaluate(GEMM, honest, precision=Precision.TF32, with_speedups=False)
    assert result.status is Status.CORRECT, result.message
    assert result.runtime is not None


def test_float16_operands_kept_for_the_timed_calls_fail_there(tf32_judge):
    """The range trial was among the checked calls only: a kernel that counted its calls used
    float16 operands once they were over and was judged correct, timed at float16's speed."""
    result = tf32_judge.evaluate(GEMM, COUNTING, precision=Precision.TF32, with_speedups=False)
    assert result.status is Status.REJECTED, result.message
    assert result.integrity[0].check == "timed_output", result.message
    assert "multiplied by 2**-24" in result.message, result.message
    assert "input_precision" in result.message and ".." not in result.message, result.message
