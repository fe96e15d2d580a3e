"""Speed of light on a GPU: a Triton copy near the measured bandwidth, a GEMM against the measured
matmul peak, and the figures of every bundled solution. Run on the GPU machine with
``pytest -m gpu`` (``benchmarks/trusted_judge.py sol`` prints the table)."""

from __future__ import annotations

import pytest

from adaexplore_mcp.judge import Status
from adaexplore_mcp.tasks import (
    bundled_solution,
    get_bundled_task,
    solution_names,
    task_from_source,
)

from .test_gpu import _has_gpu, gpu_judge  # noqa: F401 (the fixture, shared)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _has_gpu(), reason="needs a CUDA GPU")]

COPY_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.clone()


n = 2**26


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []


SMALL_SHAPES = {"n": 4096}
"""

COPY_KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x, y, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y + offsets, tl.load(x + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096)
        return y
"""


def test_a_copy_kernel_runs_near_the_bandwidth_limit(gpu_judge):  # noqa: F811
    judge, _ = gpu_judge
    result = judge.evaluate(task_from_source(COPY_TASK, "copy"), COPY_KERNEL)
    assert result.status is Status.CORRECT, result.message
    sol = result.timing.speed_of_light
    assert result.work.flops == 0 and result.work.bytes == 2 * 4 * 2**26
    assert sol.bound == "memory"
    assert 0.6 < sol.bandwidth_fraction < 1.2, sol


def test_a_gemm_is_compute_bound_against_the_measured_matmul_peak(gpu_judge):  # noqa: F811
    judge, _ = gpu_judge
    result = judge.evaluate(get_bundled_task("matmul_fp16"), bundled_solution("matmul_fp16"))
    assert result.status is Status.CORRECT, result.message
    sol = result.timing.speed_of_light
    assert result.work.flops == 2.0 * 4096**3
    assert sol.bound == "compute" and sol.peak_math == "float16 matmul"
    assert sol.peak_tflop_s > 50 and 0.2 < sol.compute_fraction < 1.5, sol


@pytest.mark.parametrize("name", solution_names())
def test_every_bundled_solution_has_its_speed_of_light(gpu_judge, name):  # noqa: F811
    judge, _ = gpu_judge
    result = judge.evaluate(get_bundled_task(name), bundled_solution(name))
    assert result.status is Status.CORRECT, result.message
    sol = result.timing.speed_of_light
    assert sol is not None and sol.peak_gb_s > 100 and sol.peak_tflop_s
    assert 0 < sol.fraction < 1.5, sol
