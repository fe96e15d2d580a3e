"""The trusted process a worker keeps: one for job after job, and a fresh one after a job that
did not end in its report (it may be stuck in that job, or damaged by it)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

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


def test_the_null_subject_makes_its_context_as_a_candidate_does(monkeypatch):
    """The null subject and its panel stand in for a candidate's new context: they make theirs
    with the environment the candidate's is made with (``sandbox.cuda_connections``)."""
    import socket

    from adaexplore_mcp.judge.trusted import calibrator
    from adaexplore_mcp.judge.worker import resident

    ours, theirs = socket.socketpair()
    at_context: list[str] = []

    def made_under_lock(device: str, gpu_lock: str | None) -> None:
        at_context.append(os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "unset"))

    def serve(channel: object) -> None:
        theirs.send(",".join(at_context).encode())

    monkeypatch.setattr(resident, "_made_under_lock", made_under_lock)
    monkeypatch.setattr(calibrator, "serve", serve)
    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            resident._calibrator(theirs, None, {"CUDA_DEVICE_MAX_CONNECTIONS": "1"})
            code = 0
        finally:
            os._exit(code)
    theirs.close()
    ours.settimeout(30)
    seen = ours.recv(64)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert seen == b"1"


def test_a_change_of_the_contexts_environment_gets_a_new_pair(monkeypatch):
    """A pair's null subject made its context for one setting: a job under another gets a new
    pair, a job under the same keeps it."""
    from adaexplore_mcp.judge.settings import SandboxSettings
    from adaexplore_mcp.judge.wire.jobs import ChildJob
    from adaexplore_mcp.judge.worker import resident

    made: list[FakePair] = []
    ended: list[FakePair] = []

    class FakePair:
        def __init__(self, device, gpu_lock, timing, context_env) -> None:
            self.key = resident.pair_key(device, gpu_lock, context_env)
            self.jobs = 0
            made.append(self)

        def alive(self) -> bool:
            return True

        def end(self) -> None:
            ended.append(self)

    monkeypatch.setattr(resident, "ResidentPair", FakePair)
    residents = resident.Residents()

    def job(connections: int | None) -> ChildJob:
        sandbox = SandboxSettings(cuda_connections=connections)
        return ChildJob(kind="eval", device="cuda:0", sandbox=sandbox)

    first: Any = residents.for_job(job(2))  # FakePairs, as made
    assert residents.for_job(job(2)) is first
    second: Any = residents.for_job(job(None))
    assert second is not first and ended == made[:1]
    assert second.key[2] == () and first.key[2] == (("CUDA_DEVICE_MAX_CONNECTIONS", "2"),)
    assert len(made) == 2


def test_the_null_subject_begins_each_job_and_ends_quietly_when_its_trusted_process_goes():
    """Each job begins with the platform and ends with a quit; a trusted process that goes away
    between two jobs (a judge closing) ends the null subject without an error. On an H200 a
    closing judge's null subject printed a broken pipe's traceback into the worker's log."""
    import socket
    import threading

    import torch
    from pydantic import TypeAdapter

    from adaexplore_mcp.judge.subject.loading import describe_platform
    from adaexplore_mcp.judge.trusted.calibrator import serve_jobs
    from adaexplore_mcp.judge.wire.frames import Channel
    from adaexplore_mcp.judge.wire.subject import QuitRequest

    cpu = torch.device("cpu")
    platform = TypeAdapter(type(describe_platform(cpu)))
    ours, theirs = socket.socketpair()
    trusted, failures = Channel(ours), []

    def run() -> None:
        try:
            serve_jobs(Channel(theirs), cpu, lambda args: None)
        except Exception as exc:  # what the test is about
            failures.append(exc)

    server = threading.Thread(target=run)
    server.start()
    for _ in range(2):  # two jobs, each begun with the platform
        trusted.receive(platform, timeout_s=30)
        trusted.send(QuitRequest())
    trusted.close()  # the judge goes away with the third job's platform on its way
    server.join(30)
    assert not server.is_alive() and failures == []

    gone, theirs = socket.socketpair()
    gone.close()  # gone before the null subject could say anything
    serve_jobs(Channel(theirs), cpu, lambda args: None)
