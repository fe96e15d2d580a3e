"""Speed of light: the arithmetic on known kernels, the task's FLOPs counted in the task's
process (and dropped when a hostile task sends garbage), and the line answers show."""

from __future__ import annotations

import asyncio
import math

import pytest
import torch

from adaexplore_mcp.judge import EvalResult, Status, TaskWork, TimingDetail, speed_of_light_line
from adaexplore_mcp.judge.measurement import KernelTime, RuntimeStats
from adaexplore_mcp.judge.policy import Precision
from adaexplore_mcp.judge.roofline import MAX_FLOPS, speed_of_light, usable_flops
from adaexplore_mcp.judge.trusted.peaks import peak_math, tensor_bytes
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task, task_from_source

GB_S = 1e9
TFLOP_S = 1e12

# -- the arithmetic ---------------------------------------------------------------------------


def test_a_copy_kernel_near_the_bandwidth_limit_is_memory_bound():
    elements = 2**26  # float32, read once and written once
    work = TaskWork(variant="main", flops=0.0, bytes=2 * 4 * elements)
    bandwidth = 3000 * GB_S
    at_peak_ms = work.bytes / bandwidth * 1e3
    sol = speed_of_light(
        work,
        median_ms=at_peak_ms / 0.92,
        bandwidth=bandwidth,
        peak_flops=60 * TFLOP_S,
        peak_math="float32 matmul",
    )
    assert sol.bound == "memory"
    assert sol.bandwidth_fraction == pytest.approx(0.92)
    assert sol.fraction == pytest.approx(0.92)
    assert sol.achieved_gb_s == pytest.approx(0.92 * 3000)
    assert sol.peak_gb_s == pytest.approx(3000)
    assert sol.compute_fraction == 0.0


def test_a_gemm_is_compute_bound_at_its_flops_over_the_matmul_peak():
    m = n = k = 4096
    work = TaskWork(variant="main", flops=2.0 * m * n * k, bytes=2 * (m * k + k * n + m * n))
    peak = 700 * TFLOP_S
    at_peak_ms = work.flops / peak * 1e3
    sol = speed_of_light(
        work,
        median_ms=at_peak_ms / 0.75,
        bandwidth=4800 * GB_S,
        peak_flops=peak,
        peak_math="float16 matmul",
    )
    assert sol.bound == "compute"
    assert sol.compute_fraction == pytest.approx(0.75)
    assert sol.fraction == pytest.approx(0.75)
    assert sol.achieved_tflop_s == pytest.approx(0.75 * 700)
    # its 100 MB move in 21 µs at peak, its 137 GFLOP take 196 µs
    memory_s, compute_s = work.bytes / (4800 * GB_S), work.flops / peak
    assert sol.bandwidth_fraction == pytest.approx(0.75 * memory_s / compute_s)


def test_without_a_flop_count_or_a_peak_the_bytes_decide():
    work = TaskWork(variant="main", flops=None, bytes=10**9, note="dropped")
    sol = speed_of_light(
        work, median_ms=1.0, bandwidth=2000 * GB_S, peak_flops=None, peak_math="float32 matmul"
    )
    assert sol.bound == "memory" and sol.bandwidth_fraction == pytest.approx(0.5)
    assert sol.compute_fraction is None and sol.achieved_tflop_s is None


@pytest.mark.parametrize("garbage", [math.nan, math.inf, -1.0, MAX_FLOPS * 10, None])
def test_a_flop_count_that_cannot_be_one_is_dropped_with_why(garbage):
    flops, note = usable_flops(garbage)
    assert flops is None and note


def test_a_flop_count_is_kept():
    assert usable_flops(2.0 * 64**3) == (2.0 * 64**3, None)
    assert usable_flops(0.0) == (0.0, None)


# -- what the trusted side sizes ----------------------------------------------------------------


def test_bytes_count_what_a_view_holds_not_its_storage():
    base = torch.zeros(100, 10)
    assert tensor_bytes([base[:5], (torch.zeros(3, dtype=torch.float16),), 7]) == 5 * 10 * 4 + 6


def test_the_peak_is_measured_in_the_math_the_policy_allows():
    half = [torch.zeros(64, 64, dtype=torch.float16), torch.zeros(4, dtype=torch.float32)]
    single = [torch.zeros(64, 64)]
    assert peak_math(half, Precision.TF32) == (torch.float16, False)
    assert peak_math(single, Precision.STRICT) == (torch.float32, False)
    assert peak_math(single, Precision.TF32) == (torch.float32, True)
    assert peak_math(single, Precision.LEGACY) == (torch.float32, True)
    assert peak_math([torch.zeros(4, dtype=torch.int64)], Precision.STRICT) == (
        torch.float32,
        False,
    )


def test_a_peak_the_pool_has_seen_measured_is_not_measured_again(monkeypatch):
    """Each math costs a trusted process 0.15-0.25 s of the GPU held alone: the pool hands
    what was measured to later jobs, and a math it has not seen is measured once."""
    from adaexplore_mcp.judge.trusted.peaks import PeakFlops

    measured: list[tuple[torch.dtype, bool]] = []
    monkeypatch.setattr(
        PeakFlops, "_measure", lambda self, dtype, tf32: measured.append((dtype, tf32)) or 1e14
    )
    peaks = PeakFlops(torch.device("cpu"))
    known = {"float16 matmul": 7e14}
    assert peaks(torch.float16, False, known=known) == 7e14
    assert peaks(torch.float32, True, known=known) == 1e14
    assert peaks(torch.float32, True, known=known) == 1e14
    assert measured == [(torch.float32, True)]


def test_the_pool_keeps_the_highest_peak_measured_and_sends_it_with_every_job(
    tmp_path, monkeypatch
):
    """A measurement can only be slowed down (a kernel still running beside it): the highest
    stays, whatever a later evaluation measured."""
    from adaexplore_mcp.judge.pool import local
    from adaexplore_mcp.judge.pool.lane import Lane
    from adaexplore_mcp.judge.settings import JudgeSettings

    settings = JudgeSettings()
    judge = local.LocalJudge(settings, home=tmp_path)
    lane = Lane("cuda:0", {}, settings, gpu=None, lock=None)
    judge._lanes = [lane]
    sent: list = []
    measured = iter([700.0, 650.0, None])

    async def submit(lane, child, timeout_s, on_progress):
        sent.append(child)
        return None, 0.0

    def result(outcome, task, code, timeout):
        answer = _timed_gemm(kernels=1)
        assert answer.timing is not None and answer.timing.speed_of_light is not None
        answer.timing.speed_of_light.peak_tflop_s = next(measured)
        return answer

    monkeypatch.setattr(judge, "_submit", submit)
    monkeypatch.setattr(local, "eval_result", result)
    monkeypatch.setattr(local, "precheck", lambda task, code: None)
    task, code = get_bundled_task("softmax"), bundled_solution("softmax") or ""
    for _ in range(3):
        asyncio.run(judge.evaluate(task, code, with_speedups=False))
    assert [child.peaks for child in sent] == [
        {},
        {"float16 matmul": 700e12},
        {"float16 matmul": 700e12},
    ]
    assert lane.peaks == {"float16 matmul": 700e12}


# -- the line answers show ----------------------------------------------------------------------


def _result(**fields) -> EvalResult:
    return EvalResult(
        status=Status.CORRECT,
        message="Correct.",
        task="t",
        task_hash="h",
        kernel_hash="k",
        **fields,
    )


def _timed_gemm(kernels: int) -> EvalResult:
    work = TaskWork(variant="main", flops=2.0 * 4096**3, bytes=3 * 2 * 4096**2)
    sol = speed_of_light(
        work,
        median_ms=work.flops / (700 * TFLOP_S) * 1e3 / 0.5,
        bandwidth=4800 * GB_S,
        peak_flops=700 * TFLOP_S,
        peak_math="float16 matmul",
    )
    launches = [
        KernelTime(name=f"kernel_{i}_" + "x" * 300, triton=True, launches=1, ms=0.1)
        for i in range(kernels)
    ]
    timing = TimingDetail(calls_per_span=4, spans=8, handoff_ms=0.01, kernels=launches)
    timing.speed_of_light = sol
    runtime = RuntimeStats(median_ms=0.4, mean_ms=0.4, std_ms=0, min_ms=0.4, max_ms=0.4, n=32)
    return _result(work=work, timing=timing, runtime=runtime, timing_meaningful=True)


def test_the_line_names_the_binding_limit_and_the_task_work():
    line = speed_of_light_line(_timed_gemm(kernels=2))
    assert line.startswith("50% of 700 TFLOP/s (float16 matmul), compute-bound")
    assert line.endswith("task work: 137 GFLOP, 101 MB") and "top launches" not in line


def test_the_line_lists_three_launches_at_most_with_short_names():
    line = speed_of_light_line(_timed_gemm(kernels=10), launches=True)
    assert "kernel_2_" in line and "kernel_3_" not in line
    assert len(line) < 400


def test_on_the_cpu_the_line_is_the_work_alone():
    work = TaskWork(variant="small", flops=2.0 * 64**3, bytes=3 * 2 * 64**2)
    line = speed_of_light_line(_result(work=work))
    assert line == "task work: 524 kFLOP, 24.6 kB (no GPU clock: no speed of light)"
    assert speed_of_light_line(_result()) is None


def test_a_step_answer_shows_the_line_and_three_launches():
    from adaexplore_mcp.mcp_server.answers import Verdict, tokens_of

    verdict = Verdict.of(_timed_gemm(kernels=10))
    assert verdict.speed_of_light and "compute-bound" in verdict.speed_of_light
    assert len(verdict.kernels) == 3
    # what the speed of light adds to a step answer, within the 1,500 tokens of docs/mcp.md
    bare = verdict.model_copy(update={"speed_of_light": None, "kernels": []})
    assert tokens_of(verdict) - tokens_of(bare) < 400


def test_the_working_memory_feedback_carries_the_line():
    from adaexplore_mcp.search_engine.views import feedback

    text = feedback(_timed_gemm(kernels=4), 1.5)
    assert "compute-bound" in text.splitlines()[1] and "top launches" in text


# -- end to end on the CPU judge ------------------------------------------------------------


GEMM = get_bundled_task("gemm_bias_relu")


def _small_gemm_work() -> tuple[float, int]:
    m = k = n = 64  # the task's small shape, the main one on the CPU
    half = 2
    data = (m * k + m * n) * half  # x and the output
    parameters = (n * k + n) * half
    return 2.0 * m * n * k, data + parameters


def test_the_cpu_judge_reports_the_task_flops_counted_by_its_reference(cpu_judge):
    result = cpu_judge.evaluate(GEMM, bundled_solution("gemm_bias_relu"), timeout_s=300)
    assert result.status is Status.CORRECT, result.message
    flops, nbytes = _small_gemm_work()
    assert result.work is not None and result.work.variant.startswith("small")
    assert result.work.flops == flops and result.work.bytes == nbytes
    assert result.work.note is None
    assert result.timing is None  # no GPU clock: no fractions
    assert speed_of_light_line(result).startswith("task work: 524 kFLOP")


def test_the_bytes_counted_are_those_a_kernel_must_read_where_the_task_says_so(cpu_judge):
    """READ_FRACTION = 0.5: half of the inputs and parameters count, all of the output."""
    padded = task_from_source(GEMM.source + "\nREAD_FRACTION = 0.5\n", "gemm_bias_relu_padded")
    result = cpu_judge.evaluate(padded, bundled_solution("gemm_bias_relu"), timeout_s=300)
    assert result.status is Status.CORRECT, result.message
    m = k = n = 64
    read, written = (m * k + n * k + n) * 2, m * n * 2
    assert read + written == _small_gemm_work()[1]
    assert result.work is not None and result.work.bytes == read // 2 + written


@pytest.mark.parametrize(
    "sent", ["float('nan')", "-5.0", "1e30", "float('inf')", "'lots'"], ids=str
)
def test_garbage_flops_from_a_hostile_task_are_dropped(cpu_judge, sent):
    hostile = GEMM.source + (
        "\n\nimport torch.utils.flop_counter as _counter\n"
        f"_counter.FlopCounterMode.get_total_flops = lambda self: {sent}\n"
    )
    task = task_from_source(hostile, "gemm_bias_relu_hostile")
    result = cpu_judge.evaluate(task, bundled_solution("gemm_bias_relu"), timeout_s=300)
    assert result.status is Status.CORRECT, result.message
    assert result.work is not None and result.work.flops is None
    assert "FLOP" in result.work.note
    assert result.work.bytes == _small_gemm_work()[1]


def test_the_task_count_includes_matrix_vector_products(tmp_path, monkeypatch):
    from adaexplore_mcp.judge.reference.task_module import TaskModule

    monkeypatch.chdir(tmp_path)  # where the task's process writes the task's file
    task = get_bundled_task("matvec")
    variant = task.main_variant("cpu")
    module = TaskModule(task.source, torch.device("cpu"))
    model = module.build(module.init_inputs(variant.name, dict(variant.overrides)), seed=0)
    inputs = module.inputs(variant.name, dict(variant.overrides), seed=1)
    (m, k), _ = inputs[0].shape, inputs[1].shape
    _, flops = module.run_counting(model, inputs)
    assert flops == 2 * m * k
