"""Judge behaviour that needs a CUDA GPU. Skipped on machines without one (CI); run on the GPU
machine with ``pytest -m gpu``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from adaexplore_mcp.judge import LocalJudge, Status
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task, solution_names

from ..conftest import SyncJudge
from .kernels import edited_solution, softmax_solution


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _has_gpu(), reason="needs a CUDA GPU")]
SOFTMAX = get_bundled_task("softmax")


@pytest.fixture(scope="module")
def gpu_judge(loop_thread, tmp_path_factory):
    from adaexplore_mcp.judge.settings import JudgeSettings

    # ADAEXPLORE_HOME lets a GPU session share compiled baselines with the benchmarks
    shared = os.environ.get("ADAEXPLORE_HOME")
    home = Path(shared) if shared else tmp_path_factory.mktemp("gpu-home")
    store = Store(home / "db.sqlite3")
    judge = LocalJudge(JudgeSettings(device="cuda:0", timeout_s=600), home=home, store=store)
    loop_thread.run(judge.start())
    yield SyncJudge(loop_thread, judge), store
    loop_thread.run(judge.close())


@pytest.mark.parametrize("name", solution_names())
def test_solutions_are_correct_and_timed(gpu_judge, name):
    judge, _ = gpu_judge
    result = judge.evaluate(get_bundled_task(name), bundled_solution(name))
    assert result.status is Status.CORRECT, result.message
    assert result.timing_meaningful and result.timing.spans >= 5
    assert result.correctness.timed_calls_checked >= result.runtime.n
    assert result.timing.handoff_ms > 0 and not result.timing.synchronizing
    # the worker's null subject was timed against new contexts: they read within microseconds
    assert result.timing.null_offset_ms is not None and abs(result.timing.null_offset_ms) < 0.02
    assert (
        result.timing.context_scatter_ms is not None and 0 < result.timing.context_scatter_ms < 0.01
    )
    assert result.timing.triton_share and result.timing.triton_share > 0.5
    assert result.eager is not None and result.speedup_eager > 0
    assert result.environment.interpreter is False
    assert result.environment.sandbox.seccomp and result.environment.sandbox.private_filesystem


def test_baselines_are_timed_once_and_cached(gpu_judge):
    judge, store = gpu_judge
    first = judge.evaluate(SOFTMAX, softmax_solution())
    count = len(store.list_baselines())
    second = judge.evaluate(SOFTMAX, softmax_solution())
    assert len(store.list_baselines()) == count
    assert first.eager == second.eager


def test_illegal_memory_access_is_a_runtime_error_and_the_pool_survives(gpu_judge):
    judge, _ = gpu_judge
    code = edited_solution(
        "softmax",
        "tl.store(y_row + cols, y, mask=mask)",
        "tl.store(y_row + cols + (1 << 40), y, mask=mask)",
    )
    result = judge.evaluate(SOFTMAX, code)
    assert result.status is Status.RUNTIME_ERROR, result.message
    assert "illegal memory access" in result.message.lower() or result.error.signal
    assert judge.evaluate(SOFTMAX, softmax_solution()).status is Status.CORRECT


AUTOTUNED = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (1024, 2048) for w in (4, 8)],
    key=["n"],
)
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 1.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
        return y
"""


def test_an_autotuned_kernel_passes(gpu_judge):
    """The autotuner benchmarks with torch's own allocations and events: Triton's work, not a
    fallback, and compiled once per shape before the gated spans."""
    from adaexplore_mcp.tasks import parse_task

    from .exploits import IDENTITY_TASK

    judge, _ = gpu_judge
    result = judge.evaluate(parse_task(IDENTITY_TASK, name="identity"), AUTOTUNED)
    assert result.status is Status.CORRECT, result.message
    assert result.timing is not None and not result.timing.synchronizing


SLOW_TO_COMPILE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def identity_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, ROUNDS: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    half = x * 0.5
    y = x
    for _ in tl.static_range(ROUNDS):  # unrolled: seconds of compile, and y == x exactly
        y = y * 0.5 + half
    tl.store(y_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        identity_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, ROUNDS=ROUNDS_HERE)
        return y
"""


def test_the_gpu_lock_is_free_while_a_candidate_compiles(gpu_judge):
    """Another evaluation's timing (here: this test, taking the lock exclusively over and
    over) never waits for a compile: the trusted process lets the lock go meanwhile."""
    import threading
    import time

    from adaexplore_mcp.judge.trusted.gpulock import GpuLock
    from adaexplore_mcp.tasks import parse_task

    from .exploits import IDENTITY_TASK

    judge, _ = gpu_judge
    (lane,) = judge.judge._lanes
    lock = GpuLock(lane.lock)
    waits: list[float] = []
    done = threading.Event()

    def time_like_another_evaluation() -> None:
        while not done.is_set():
            begun = time.monotonic()
            with lock.exclusive():
                waits.append(time.monotonic() - begun)
            time.sleep(0.02)

    task = parse_task(IDENTITY_TASK, name="identity")
    code = SLOW_TO_COMPILE.replace("ROUNDS_HERE", "4000")
    other = threading.Thread(target=time_like_another_evaluation)
    other.start()
    try:
        result = judge.evaluate(task, code)
    finally:
        done.set()
        other.join()
    assert result.status is Status.CORRECT, result.message
    assert result.phases.compile_s > 2.0, "the kernel must compile slowly for this test to tell"
    assert max(waits) < result.phases.compile_s / 2, (max(waits), result.phases)


def test_the_null_subjects_panel_is_gone_once_timed(loop_thread, tmp_path):
    """The panel (``trusted.null_panel``) lives only until the trusted process has timed it:
    after the first evaluations the worker's children outside any sandbox are the pair alone,
    and its offset is the same for every evaluation of the pair."""
    from adaexplore_mcp.judge.settings import JudgeSettings, TimingSettings

    from .test_resident import _trusted_children

    settings = JudgeSettings(
        device="cuda:0",
        workers_per_device=1,
        timeout_s=600,
        timing=TimingSettings(null_panel=3, null_panel_rounds=4),
    )
    judge = LocalJudge(settings, home=tmp_path)

    async def run():
        await judge.start()
        try:
            results = [await judge.evaluate(SOFTMAX, softmax_solution()) for _ in range(2)]
            return results, _trusted_children(judge)
        finally:
            await judge.close()

    results, children = loop_thread.run(run())
    for result in results:
        assert result.status is Status.CORRECT, result.message
    offsets = {result.timing.null_offset_ms for result in results}
    assert len(offsets) == 1 and None not in offsets, offsets
    assert len(children) == 2, children  # the trusted process and its null subject


def test_a_kernels_process_is_sealed_after_its_context(loop_thread, tmp_path):
    """On a GPU too, the kernel's process makes its context under the GPU lock and is then
    sealed: a lock it takes is not seen from a second open file, and inotify is refused. Its
    context was made with the driver's queues the settings name (two by default)."""
    from adaexplore_mcp.judge.settings import IntegritySettings, JudgeSettings, SandboxSettings

    from .kernels import module
    from .test_sealed import LOCK_SIGNAL

    settings = JudgeSettings(
        device="cuda:0", timeout_s=300, integrity=IntegritySettings(enabled=False)
    )
    judge = LocalJudge(settings, home=tmp_path)
    sealed = module(
        "return torch.softmax(x, -1) if not (SEEN or WATCH) else torch.zeros_like(x)",
        prelude=LOCK_SIGNAL,
    )
    queues = module(
        "return torch.softmax(x, -1)",
        prelude="import os\n"
        "seen = getattr(os, 'environ').get('CUDA_DEVICE_MAX_CONNECTIONS')\n"
        f"assert seen == '{SandboxSettings().cuda_connections}', "
        "f'CUDA_DEVICE_MAX_CONNECTIONS={seen}'\n",
    )
    loop_thread.run(judge.start())
    try:
        results = [SyncJudge(loop_thread, judge).evaluate(SOFTMAX, k) for k in (sealed, queues)]
    finally:
        loop_thread.run(judge.close())
    for result in results:
        assert result.status is Status.CORRECT, result.message


def test_the_wait_for_the_gpu_is_reported(gpu_judge):
    """Another evaluation's timing (this test, holding the lock exclusively for 3 s) shows in
    ``phases.gpu_wait_s``."""
    import threading
    import time

    from adaexplore_mcp.judge.trusted.gpulock import GpuLock

    judge, _ = gpu_judge
    (lane,) = judge.judge._lanes
    results = []
    with GpuLock(lane.lock).exclusive():
        evaluation = threading.Thread(
            target=lambda: results.append(judge.evaluate(SOFTMAX, softmax_solution()))
        )
        evaluation.start()
        time.sleep(3)
    evaluation.join()
    (result,) = results
    assert result.status is Status.CORRECT, result.message
    assert 1.0 < result.phases.gpu_wait_s < result.phases.total_s, result.phases
