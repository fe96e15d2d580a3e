"""The trusted process a worker keeps: one for job after job, and a fresh one after a job that
did not end in its report (it may be stuck in that job, or damaged by it)."""

from __future__ import annotations

import os
import subprocess
import sys

from adaexplore_mcp.judge import LocalJudge, Status
from adaexplore_mcp.tasks import get_bundled_task

from ..conftest import cpu_settings
from .kernels import module, softmax_solution

SOFTMAX = get_bundled_task("softmax")


def _trusted_children(judge: LocalJudge) -> set[int]:
    """The worker's children outside any sandbox (user-code processes each have a user
    namespace of their own)."""
    (handle,) = [h for lane in judge._lanes for h in lane.handles if h is not None and h.alive]
    children: set[int] = set()
    for tid in os.listdir(f"/proc/{handle.pid}/task"):
        with open(f"/proc/{handle.pid}/task/{tid}/children") as f:
            children.update(int(p) for p in f.read().split())
    own = os.readlink(f"/proc/{handle.pid}/ns/user")
    return {pid for pid in children if _user_namespace(pid) == own}


def _user_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/user")
    except OSError:
        return None


def test_a_job_without_a_report_retires_the_trusted_process(loop_thread, tmp_path):
    judge = LocalJudge(cpu_settings(workers_per_device=1, timeout_s=20), home=tmp_path)

    async def run():
        await judge.start()
        try:
            assert (await judge.evaluate(SOFTMAX, softmax_solution())).status is Status.CORRECT
            (resident,) = _trusted_children(judge)
            assert (await judge.evaluate(SOFTMAX, softmax_solution())).status is Status.CORRECT
            assert _trusted_children(judge) == {resident}
            endless = module("while True:\n    pass")
            timed_out = await judge.evaluate(SOFTMAX, endless, timeout_s=3)
            assert timed_out.status is Status.TIMEOUT, timed_out.message
            after = await judge.evaluate(SOFTMAX, softmax_solution())
            return resident, after, _trusted_children(judge)
        finally:
            await judge.close()

    resident, after, children = loop_thread.run(run())
    assert after.status is Status.CORRECT, after.message
    assert len(children) == 1 and resident not in children


def test_the_profiling_diagnostic_covers_the_resident_trusted_process(tmp_path):
    """ADAEXPLORE_DEBUG_PROFILE profiles the trusted and the task's processes; the resident
    trusted process, made once per worker, still runs each job under it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADAEXPLORE_")}
    env |= {"ADAEXPLORE_HOME": str(tmp_path), "ADAEXPLORE_DEBUG_PROFILE": "3"}
    command = ["eval", "softmax", "--solution", "--device", "cpu"]
    proc = subprocess.run(
        [sys.executable, "-m", "adaexplore_mcp.cli", *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "profile of the trusted's process" in proc.stderr
    assert "profile of the task's process" in proc.stderr
