"""The Nsight Compute profile with the real ncu on a GPU (``pytest -m gpu``): a bundled solution's
Triton kernel shows up with a positive duration and its throughput."""

from __future__ import annotations

import shutil

import pytest

from adaexplore_mcp.judge.profile import Profiler
from adaexplore_mcp.judge.settings import JudgeSettings
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task

from .test_gpu import _has_gpu

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _has_gpu(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(shutil.which("ncu") is None, reason="needs Nsight Compute (ncu)"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_gelu_solution_profiles_with_the_real_ncu(tmp_path) -> None:
    profiler = Profiler(JudgeSettings(device="cuda:0"), home=tmp_path)
    report = await profiler.profile(get_bundled_task("gelu"), bundled_solution("gelu") or "")
    assert report.device == "cuda:0" and report.launches >= report.profiled_calls
    kernel = next(k for k in report.kernels if "gelu" in k.name)
    assert kernel.total_us > 0 and kernel.calls >= report.profiled_calls
    assert kernel.memory_pct is not None and kernel.sm_pct is not None
    assert kernel.registers_per_thread and kernel.grid_size and kernel.block_size
