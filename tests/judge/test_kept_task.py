"""A worker keeps an evaluation's task process for the next evaluation of the same task
(``worker.kept``), and the pool sends a worker the jobs of the task it keeps first
(``pool.affinity``). The kept process must never serve another task, nor outlive a job that
did not end cleanly."""

from __future__ import annotations

import asyncio
import resource
import socket
import subprocess
from dataclasses import dataclass

import pytest

from adaexplore_mcp.judge import LocalJudge, Status
from adaexplore_mcp.judge.pool.affinity import AffinityQueue
from adaexplore_mcp.judge.reference import harness
from adaexplore_mcp.judge.settings import IntegritySettings, SandboxSettings
from adaexplore_mcp.judge.wire.frames import encode
from adaexplore_mcp.judge.wire.jobs import DevicePrepared
from adaexplore_mcp.judge.wire.subject import OkAnswer
from adaexplore_mcp.judge.worker.kept import KeptTask
from adaexplore_mcp.judge.worker.processes import Forked
from adaexplore_mcp.tasks import get_bundled_task, parse_task

from ..conftest import cpu_settings
from .kernels import module, softmax_solution
from .test_isolation import _worker_children

SOFTMAX = get_bundled_task("softmax")

# A task whose import replaces torch.softmax for the whole process: its own reference is
# consistent with itself, but a process it ran in must never compute another task's reference.
POISONING = parse_task(
    "import torch\n"
    "torch.softmax = lambda x, dim=-1, **kwargs: torch.zeros_like(x)\n"
    + SOFTMAX.source.split('"""', 2)[2],
    name="poisoning_softmax",
)


# -- the queue ---------------------------------------------------------------------------------


@dataclass
class Job:
    name: str
    affinity: str | None
    passed_over: int = 0
    gone: bool = False

    def abandoned(self) -> bool:
        return self.gone


def _queue(*jobs: Job, patience: int = 8) -> AffinityQueue[Job]:
    queue: AffinityQueue[Job] = AffinityQueue(maxsize=0, patience=patience)
    for job in jobs:
        queue.put_nowait(job)
    return queue


def test_a_worker_takes_the_oldest_job_of_the_task_it_keeps_first():
    queue = _queue(Job("a1", "a"), Job("b1", "b"), Job("b2", "b"))
    assert queue.get_nowait("b").name == "b1"
    assert queue.get_nowait("c").name == "a1"  # no job of its task: the oldest
    assert queue.get_nowait(None).name == "b2"


def test_no_job_is_passed_over_more_than_patience_allows():
    queue = _queue(Job("old", "a"), *(Job(f"b{i}", "b") for i in range(5)), patience=2)
    taken = [queue.get_nowait("b").name for _ in range(3)]
    assert taken == ["b0", "b1", "old"]  # passed over twice, then taken whatever the worker keeps


def test_abandoned_jobs_leave_the_queue_and_waiters_wake():
    async def scenario() -> list[str]:
        queue = _queue(Job("gone", "a", gone=True))
        queue.drop_abandoned()
        assert queue.empty()
        waiting = asyncio.ensure_future(queue.get("a"))
        await asyncio.sleep(0)
        queue.put_nowait(Job("new", "b"))
        return [(await waiting).name]

    assert asyncio.run(scenario()) == ["new"]


# -- the kept process --------------------------------------------------------------------------


@pytest.fixture
def child_with_socket():
    ours, theirs = socket.socketpair()
    child = subprocess.Popen(["sleep", "30"])
    process = Forked("task", child.pid, output_fd=-1, sock=ours)
    yield process, theirs
    child.kill()
    child.wait()
    theirs.close()
    ours.close()


def test_a_kept_process_is_ready_only_with_its_ready_word_and_nothing_else(child_with_socket):
    process, theirs = child_with_socket
    kept = KeptTask("key", process)
    assert not kept.ready(0.05)  # nothing said yet
    theirs.sendall(encode(OkAnswer()) + encode(DevicePrepared()))
    assert not kept.ready(0.05)  # an answer left from the job before: out of step
    process.sock.recv(1 << 16)
    theirs.sendall(encode(DevicePrepared()))
    assert kept.ready(0.05)


def test_a_kept_process_that_ended_is_not_ready(child_with_socket):
    process, theirs = child_with_socket
    theirs.sendall(encode(DevicePrepared()))
    subprocess.run(["kill", "-9", str(process.pid)], check=True)
    import os

    os.waitpid(process.pid, 0)
    assert not KeptTask("key", process).ready(0.05)


def test_a_task_process_retires_itself_at_half_its_cpu_time_limit(monkeypatch):
    usage = resource.getrusage(resource.RUSAGE_SELF)
    spent = usage.ru_utime + usage.ru_stime
    monkeypatch.setattr(harness.resource, "getrlimit", lambda _: (int(spent * 2) + 100, -1))
    assert harness._cpu_time_to_spare()
    monkeypatch.setattr(harness.resource, "getrlimit", lambda _: (int(spent), -1))
    assert not harness._cpu_time_to_spare()


# -- through a judge ---------------------------------------------------------------------------


def _one_worker(**overrides):
    return cpu_settings(
        workers_per_device=1, integrity=IntegritySettings(enabled=False), **overrides
    )


def test_the_same_task_reuses_its_process_and_another_task_gets_a_fresh_one(loop_thread, tmp_path):
    plain = module("return torch.softmax(x, -1)")

    async def run():
        async with LocalJudge(_one_worker(), home=tmp_path) as judge:
            results, children = [], []
            for task in (SOFTMAX, SOFTMAX, POISONING):
                results.append(await judge.evaluate(task, plain))
                await asyncio.sleep(0.2)
                children.append(set(_worker_children(judge)))
            return results, children

    results, children = loop_thread.run(run())
    assert [r.status for r in results] == [Status.CORRECT, Status.CORRECT, Status.INCORRECT]
    # the trusted process and the task's process served both softmax evaluations, and the
    # spare set's task process, unused, was set aside
    assert len(children[0] & children[1]) == 3
    # another task: the same trusted process, and the task process set aside, never used
    assert len(children[1] & children[2]) == 2


def test_a_task_switch_takes_a_task_process_started_before_its_job(loop_thread, tmp_path):
    """A search that moves to another task does not wait for a fork and a CUDA context: the
    spare task process, unused while the kept one served, serves the new task."""
    plain = module("return torch.softmax(x, -1)")

    async def run():
        async with LocalJudge(_one_worker(), home=tmp_path) as judge:
            await judge.evaluate(SOFTMAX, plain)
            await judge.evaluate(SOFTMAX, plain)
            await asyncio.sleep(0.2)
            before = set(_worker_children(judge))
            switched = await judge.evaluate(POISONING, plain)
            await asyncio.sleep(0.2)
            return switched, before, set(_worker_children(judge))

    switched, before, after = loop_thread.run(run())
    assert switched.status is Status.INCORRECT  # the poisoned reference is zeros
    assert len(before) == 4  # trusted, the kept task, the spare candidate, the set-aside task
    assert len(before & after) == 2  # trusted, and the set-aside task now kept for its task


def test_processes_forked_for_other_limits_are_ended_not_used(loop_thread, tmp_path):
    """A job with another time limit (another process plan) takes neither the kept task process
    nor the spare set nor the task process set aside: all three are ended, none leaks."""
    plain = module("return torch.softmax(x, -1)")

    async def run():
        async with LocalJudge(_one_worker(), home=tmp_path) as judge:
            await judge.evaluate(SOFTMAX, plain, timeout_s=60)
            await judge.evaluate(SOFTMAX, plain, timeout_s=60)
            await asyncio.sleep(0.2)
            before = set(_worker_children(judge))
            other = await judge.evaluate(SOFTMAX, plain, timeout_s=30)
            await asyncio.sleep(0.2)
            return other, before, set(_worker_children(judge))

    other, before, after = loop_thread.run(run())
    assert other.status is Status.CORRECT, other.message
    assert len(before) == len(after) == 4
    assert len(before & after) == 1  # the resident trusted process only


# A task that writes a scratch file where it runs, as it is imported (every job imports it).
SCRATCH_WRITER = parse_task(
    "import pathlib, tempfile\n"
    "pathlib.Path('scratch.txt').write_text('x')\n"
    "tempfile.NamedTemporaryFile().close()\n" + SOFTMAX.source.split('"""', 2)[2],
    name="scratch_writing_softmax",
)


def test_a_kept_task_process_without_a_private_view_keeps_its_directories(loop_thread, tmp_path):
    """Without a private filesystem view a process's work/ and tmp/ are real directories under
    its set's. A task process outlives its set (kept, or set aside): when the set's directories
    went with the set, its next evaluation failed to write where it runs."""
    plain = module("return torch.softmax(x, -1)")
    settings = _one_worker(sandbox=SandboxSettings(private_filesystem=False, required=False))

    async def run():
        async with LocalJudge(settings, home=tmp_path) as judge:
            return [await judge.evaluate(SCRATCH_WRITER, plain) for _ in range(3)]

    results = loop_thread.run(run())
    assert [r.status for r in results] == [Status.CORRECT] * 3, [r.message for r in results]


def test_a_task_that_poisons_torch_never_computes_another_tasks_reference(loop_thread, tmp_path):
    """Exploit: a task's import replaces torch.softmax. Were its process kept for the next
    task, that task's reference would be zeros: an honest kernel judged incorrect, and a kernel
    returning zeros judged correct."""
    zeros = module("return torch.zeros_like(x)")

    async def run():
        async with LocalJudge(_one_worker(), home=tmp_path) as judge:
            await judge.evaluate(POISONING, zeros)
            honest = await judge.evaluate(SOFTMAX, softmax_solution())
            cheat = await judge.evaluate(SOFTMAX, zeros)
            return honest, cheat

    honest, cheat = loop_thread.run(run())
    assert honest.status is Status.CORRECT, honest.message
    assert cheat.status is Status.INCORRECT, cheat.message


def test_a_job_that_times_out_ends_the_kept_task_process(loop_thread, tmp_path):
    plain = module("return torch.softmax(x, -1)")
    hang = module("while True:\n        pass")

    async def run():
        async with LocalJudge(_one_worker(timeout_s=10), home=tmp_path) as judge:
            first = await judge.evaluate(SOFTMAX, plain)
            await asyncio.sleep(0.2)
            before = set(_worker_children(judge))
            hung = await judge.evaluate(SOFTMAX, hang)
            after_hang = await judge.evaluate(SOFTMAX, plain)
            await asyncio.sleep(0.2)
            return first, hung, after_hang, before, set(_worker_children(judge))

    first, hung, after_hang, before, after = loop_thread.run(run())
    assert first.status is Status.CORRECT and after_hang.status is Status.CORRECT
    assert hung.status is Status.TIMEOUT
    # the trusted process and the kept task process both replaced: only the task process set
    # aside, which the hung job never reached, lives on (it served the job after)
    assert len(before) == 4 and len(before & after) == 1
