"""The Nsight Compute profile on the CPU: ncu's raw CSV read and summarized per kernel, the
answer's bound, and the profiler run end to end through the sandbox with a stand-in ncu
(``fake_ncu``): the profiled process, a failing ncu, a timeout, a missing ncu or GPU."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adaexplore_mcp.judge.profile import ProfileFailed, Profiler, ProfilerUnavailable
from adaexplore_mcp.judge.profile.metrics import bound_by, parse_raw_csv, summarize
from adaexplore_mcp.judge.profile.models import KERNEL_NAME_CHARS, MAX_KERNELS
from adaexplore_mcp.judge.settings import JudgeSettings, ProfileSettings
from adaexplore_mcp.mcp_server.answers import tokens_of
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task

from .fake_ncu import Row, ncu_csv, write_fake_ncu

GELU_TASK = get_bundled_task("gelu")
GELU = bundled_solution("gelu") or ""
ROWS = [
    Row("gelu_kernel", 41_728, sm=5.0, memory=81.0),
    Row("gelu_kernel", 41_664, sm=5.0, memory=81.0),
    Row("sm80_xmma_gemm_f32f32", 59_552, sm=67.5, memory=58.7, registers=224, shared=19_840),
    Row("tiny_kernel", 2_000, sm=3.0, memory=4.0),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_raw_page_is_read_in_microseconds() -> None:
    text = "==PROF== Connected to process 1\n" + ncu_csv([ROWS[0], Row("k", 1_500, sm="n/a")])
    first, second = parse_raw_csv(text)
    assert first.kernel == "gelu_kernel" and first.duration_us == pytest.approx(41.728)
    assert first.values["launch__registers_per_thread"] == 18
    assert first.values["launch__grid_size"] == 16_384  # "16,384"
    assert first.capability == "9.0"
    assert second.values["sm__throughput.avg.pct_of_peak_sustained_elapsed"] is None
    scaled = parse_raw_csv(ncu_csv([Row("k", 3)], time_unit="usecond"))
    assert scaled[0].duration_us == pytest.approx(3.0)


def test_kernels_are_summed_per_name_longest_first() -> None:
    kernels = summarize(parse_raw_csv(ncu_csv(ROWS)), top=2)
    assert [k.name for k in kernels] == ["gelu_kernel", "sm80_xmma_gemm_f32f32"]
    gelu, gemm = kernels
    assert gelu.calls == 2 and gelu.total_us == pytest.approx(83.392)
    assert gelu.mean_us == pytest.approx(41.696)
    assert gelu.share == pytest.approx(83.392 / 144.944, abs=1e-4)
    assert gelu.bound_by == "memory" and "memory-bound" in gelu.hint
    assert gemm.bound_by == "compute" and gemm.registers_per_thread == 224
    assert gemm.shared_mem_per_block == 19_840 and gemm.grid_size == 16_384


def test_percentages_are_weighted_by_time() -> None:
    rows = [Row("k", 9_000, memory=90.0), Row("k", 1_000, memory=10.0)]
    (kernel,) = summarize(parse_raw_csv(ncu_csv(rows)), top=5)
    assert kernel.memory_pct == pytest.approx(82.0)


def test_what_bounds_a_kernel() -> None:
    assert bound_by(5.0, 81.0) == "memory"
    assert bound_by(70.0, 58.0) == "compute"
    assert bound_by(20.0, 30.0) == "latency"
    assert bound_by(None, None) == "latency"


def test_the_answer_is_bounded() -> None:
    rows = [Row("k" * 300 + str(i), 1_000 + i) for i in range(60)]
    kernels = summarize(parse_raw_csv(ncu_csv(rows)), top=MAX_KERNELS + 10)
    assert len(kernels) == MAX_KERNELS
    assert all(len(k.name) <= KERNEL_NAME_CHARS for k in kernels)
    # the budget docs/mcp.md gives: 5 kernels within 1,000 tokens, 20 within 3,500
    assert sum(tokens_of(k) for k in kernels) <= 3_500
    assert sum(tokens_of(k) for k in kernels[:5]) <= 1_000


def _profiler(tmp_path: Path, ncu: Path | str, *, timeout_s: float = 120, device="cpu"):
    settings = JudgeSettings(
        device="cpu", profile=ProfileSettings(ncu=str(ncu), timeout_s=timeout_s)
    )
    return Profiler(settings, home=tmp_path / "home", device=device)


@pytest.mark.anyio
async def test_a_profile_runs_forward_in_the_sandbox_under_ncu(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "adaexplore.sqlite3").write_text("the store")
    # the kernel fails if it can see the judge's home: the profiled process must not
    peek = f"import os\nassert not os.path.exists({str(home)!r}), 'the home is visible'\n"
    ncu = write_fake_ncu(tmp_path / "ncu-bin", ROWS, run_target=True)
    report = await _profiler(tmp_path, ncu).profile(GELU_TASK, peek + GELU, top=2)
    assert report.task == "gelu" and report.launches == 4 and report.distinct_kernels == 3
    assert [k.name for k in report.kernels] == ["gelu_kernel", "sm80_xmma_gemm_f32f32"]
    assert report.omitted_kernels == 1 and report.compute_capability == "9.0"
    assert "never a verdict" in report.note


@pytest.mark.anyio
async def test_a_kernel_that_fails_while_profiled_says_so(tmp_path: Path) -> None:
    broken = GELU.replace(
        "-> torch.Tensor:\n", "-> torch.Tensor:\n        raise ValueError('no luck')\n"
    )
    assert broken != GELU
    ncu = write_fake_ncu(tmp_path / "ncu-bin", ROWS, run_target=True)
    with pytest.raises(ProfileFailed) as failed:
        await _profiler(tmp_path, ncu).profile(GELU_TASK, broken)
    assert "the kernel failed while profiled" in str(failed.value)
    assert "ValueError: no luck" in str(failed.value)


@pytest.mark.anyio
async def test_ncu_failing_is_reported_with_its_output(tmp_path: Path) -> None:
    ncu = write_fake_ncu(
        tmp_path / "ncu-bin", ROWS, exit_code=1, message="==ERROR== ERR_NVGPUCTRPERM"
    )
    with pytest.raises(ProfileFailed) as failed:
        await _profiler(tmp_path, ncu).profile(GELU_TASK, GELU)
    assert "ncu failed (exit 1)" in str(failed.value)
    assert "ERR_NVGPUCTRPERM" in str(failed.value)


@pytest.mark.anyio
async def test_no_launch_recorded_is_an_error(tmp_path: Path) -> None:
    ncu = write_fake_ncu(tmp_path / "ncu-bin", [])
    with pytest.raises(ProfileFailed, match="no kernel launch"):
        await _profiler(tmp_path, ncu).profile(GELU_TASK, GELU)


@pytest.mark.anyio
async def test_a_profile_past_its_limit_is_stopped(tmp_path: Path) -> None:
    ncu = write_fake_ncu(tmp_path / "ncu-bin", ROWS, sleep_s=120)
    started = time.monotonic()
    with pytest.raises(ProfileFailed, match="did not finish within 3 s"):
        await _profiler(tmp_path, ncu, timeout_s=3).profile(GELU_TASK, GELU)
    assert time.monotonic() - started < 30


@pytest.mark.anyio
async def test_a_missing_ncu_says_what_to_install_or_set(tmp_path: Path) -> None:
    with pytest.raises(ProfilerUnavailable, match="ADAEXPLORE_JUDGE__PROFILE__NCU"):
        await _profiler(tmp_path, tmp_path / "no-ncu").profile(GELU_TASK, GELU)


@pytest.mark.anyio
async def test_no_gpu_means_no_profile(tmp_path: Path) -> None:
    ncu = write_fake_ncu(tmp_path / "ncu-bin", ROWS)
    settings = JudgeSettings(device="cpu", profile=ProfileSettings(ncu=str(ncu)))
    with pytest.raises(ProfilerUnavailable, match="needs a CUDA GPU"):
        await Profiler(settings, home=tmp_path).profile(GELU_TASK, GELU)
