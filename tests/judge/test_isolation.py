"""Candidates that crash, hang, flood or attack the judge: each gets a verdict, the pool keeps
serving, and nothing they start outlives their evaluation."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from adaexplore_mcp.judge import LocalJudge, QueueFull, Status
from adaexplore_mcp.judge.settings import IntegritySettings, SandboxSettings
from adaexplore_mcp.tasks import TaskError, get_bundled_task, parse_task

from ..conftest import cpu_settings
from .kernels import edited_solution, module, softmax_solution

SOFTMAX = get_bundled_task("softmax")


def _still_serves(cpu_judge) -> None:
    result = cpu_judge.evaluate(SOFTMAX, softmax_solution())
    assert result.status is Status.CORRECT, result.message


def _worker_children(judge: LocalJudge) -> list[int]:
    children = []
    for lane in judge._lanes:
        for handle in lane.handles:
            if handle is None or not handle.alive:
                continue
            for tid in os.listdir(f"/proc/{handle.pid}/task"):
                with open(f"/proc/{handle.pid}/task/{tid}/children") as f:
                    children.extend(int(p) for p in f.read().split())
    return children


def test_segfault_in_a_kernel(cpu_judge):
    # An unmasked out-of-bounds store segfaults Triton's interpreter.
    code = edited_solution(
        "softmax", "tl.store(y_row + cols, y, mask=mask)", "tl.store(y_row + cols + 100000000, y)"
    )
    result = cpu_judge.evaluate(SOFTMAX, code)
    assert result.status is Status.RUNTIME_ERROR
    assert result.error.signal == "SIGSEGV"
    assert "out-of-bounds" in result.message
    _still_serves(cpu_judge)


@pytest.mark.parametrize(
    ("forward", "signal", "exit_code"),
    [
        ("os._exit(3)", None, 3),
        ("os.abort()", "SIGABRT", None),
        ("getattr(os, 'kill')(os.getpid(), 9)", "SIGKILL", None),
    ],
)
def test_process_death_gives_a_runtime_error(unguarded_judge, forward, signal, exit_code):
    result = unguarded_judge.evaluate(SOFTMAX, module(forward))
    assert result.status is Status.RUNTIME_ERROR
    assert result.error.signal == signal and result.error.exit_code == exit_code
    _still_serves(unguarded_judge)


def test_sys_exit_is_a_runtime_error(cpu_judge):
    result = cpu_judge.evaluate(SOFTMAX, module("sys.exit(0)"))
    assert result.status is Status.RUNTIME_ERROR
    assert result.error.type == "SystemExit"


@pytest.mark.parametrize(
    ("code", "phase"),
    [
        (module("return x", prelude="while True:\n    pass"), "compiling"),
        (module("while True:\n    pass"), "compiling"),
        (
            module(
                "self.calls += 1\nwhile self.calls > 1:\n    pass\nreturn torch.softmax(x, -1)",
                init="self.calls = 0",
            ),
            "checking",
        ),
    ],
    ids=["at-import", "first-call", "later-call"],
)
def test_endless_loops_time_out_within_the_bound(unguarded_judge, code, phase):
    started = time.monotonic()
    result = unguarded_judge.evaluate(SOFTMAX, code, timeout_s=3)
    elapsed = time.monotonic() - started
    assert result.status is Status.TIMEOUT
    assert result.error.phase.value == phase
    assert 3 <= elapsed < 3 + 2.5
    assert "No result within 3 s" in result.message
    _still_serves(unguarded_judge)


def test_a_flood_of_prints_is_stopped_by_the_output_limit(cpu_judge, capfd):
    started = time.monotonic()
    result = cpu_judge.evaluate(
        SOFTMAX, module("while True:\n    print('x' * 10000)"), timeout_s=30
    )
    assert time.monotonic() - started < 20
    assert result.status is Status.RUNTIME_ERROR
    assert "output limit" in result.message
    assert result.output_tail.endswith("x" * 100 + "\n") or "x" * 100 in result.output_tail
    assert "xxxxxxxxxx" not in capfd.readouterr().out
    _still_serves(cpu_judge)


def test_candidate_output_never_reaches_the_callers_stdout(unguarded_judge, capfd):
    code = module("os.write(1, b'WRITTEN-TO-FD-1'); print('PRINTED'); return torch.softmax(x, -1)")
    result = unguarded_judge.evaluate(SOFTMAX, code)
    assert result.status is Status.CORRECT
    captured = capfd.readouterr()
    assert "WRITTEN-TO-FD-1" not in captured.out + captured.err
    assert "PRINTED" not in captured.out + captured.err
    assert "WRITTEN-TO-FD-1" in result.output_tail and "PRINTED" in result.output_tail


def test_a_kernel_cannot_signal_any_process_but_its_own(unguarded_judge):
    """Past the source check and with the first signals off: the system-call filter refuses a
    signal to the worker, and in its PID namespace the worker is not even there to name."""
    kill = "getattr(os, 'kill')(os.getppid() or 1, 9)\ntime.sleep(5)"
    result = unguarded_judge.evaluate(SOFTMAX, module(kill))
    assert result.status is Status.RUNTIME_ERROR, result.message
    assert result.error.type in ("PermissionError", "ProcessLookupError"), result.message
    _still_serves(unguarded_judge)


@pytest.mark.parametrize("leave", ["os.setsid()", "os.setpgid(0, 0)"])
def test_a_kernel_cannot_leave_its_process_group(unguarded_judge, leave):
    """The judge stops a job's process group while it calibrates its clock; a process that
    left the group would go on launching GPU work. Past the source check, the system-call
    filter refuses both ways out."""
    # once: a second setsid fails anyway, its process leading the session the first made
    forward = f"if not _LEFT:\n    _LEFT.append({leave})\nreturn torch.softmax(x, -1)"
    result = unguarded_judge.evaluate(SOFTMAX, module(forward, prelude="_LEFT = []"))
    assert result.status is Status.RUNTIME_ERROR, result.message
    assert result.error.type == "PermissionError", result.message


def test_a_kernel_cannot_start_processes_on_the_cpu(unguarded_judge):
    """Through the low-level module the audit hook never sees, too."""
    for spawn in (
        "import _posixsubprocess\nr, w = os.pipe()\n"
        "_posixsubprocess.fork_exec(['true'], [b'/bin/true'], True, (w,), None, None, -1, -1,"
        " -1, -1, -1, -1, r, w, False, False, 0, None, None, None, -1, None, False)",
        "getattr(os, 'fork')()",
        "getattr(os, 'posix_spawnp')('true', ['true'], {})",
    ):
        result = unguarded_judge.evaluate(SOFTMAX, module(spawn + "\nreturn torch.softmax(x, -1)"))
        assert result.status is Status.RUNTIME_ERROR, (spawn, result.message)
        assert "not permitted" in result.error.message or "Errno 1" in result.error.message


def test_processes_a_kernel_may_start_are_killed_with_it(loop_thread, tmp_path):
    """Where processes are allowed (on a GPU Triton needs them), they stay in the kernel's PID
    namespace and process group (a session of their own is refused) and end with its
    evaluation."""
    marker = "987654321"
    spawn = "getattr(os, 'posix_spawnp')"
    code = module(
        f"try:\n    {spawn}('sleep', ['sleep', '{marker}'], {{}}, setsid=True)\n"
        "except PermissionError:\n    pass\nelse:\n    raise AssertionError('a new session')\n"
        f"{spawn}('sleep', ['sleep', '{marker}'], {{}})\n"
        "return torch.softmax(x, -1)"
    )
    settings = cpu_settings(
        workers_per_device=1,
        integrity=IntegritySettings(enabled=False),
        sandbox=SandboxSettings(allow_processes=True),
    )

    async def run():
        async with LocalJudge(settings, home=tmp_path) as judge:
            result = await judge.evaluate(SOFTMAX, code)
            time.sleep(0.2)
            after_first = _worker_children(judge)
            again = await judge.evaluate(SOFTMAX, code)
            time.sleep(0.2)
            return result, again, after_first, _worker_children(judge)

    result, again, after_first, after_second = loop_thread.run(run())
    assert result.status is Status.CORRECT, result.message
    assert again.status is Status.CORRECT, again.message
    leftovers = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            leftovers.append(pid)
    assert leftovers == []
    # what the worker keeps is its resident trusted process, the task's process (kept for the
    # next evaluation of the same task) and a spare set (a candidate's process, and a task's
    # process set aside, unused, for another task); the second evaluation ran in the first
    # one's spare candidate, which ended with it; the same trusted process and the same task
    # process served both
    assert len(after_first) == len(after_second) == 4
    assert len(set(after_first) & set(after_second)) == 3


def test_no_state_leaks_from_one_evaluation_to_the_next(unguarded_judge):
    polluter = "import torch\nsetattr(torch, '_adaexplore_polluted', True)\n" + softmax_solution()
    assert unguarded_judge.evaluate(SOFTMAX, polluter).status is Status.CORRECT
    checker = (
        "import torch\nassert not hasattr(torch, '_adaexplore_polluted')\n" + softmax_solution()
    )
    assert unguarded_judge.evaluate(SOFTMAX, checker).status is Status.CORRECT


def test_the_environment_is_scrubbed(loop_thread, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4")  # the judge's to set, on a GPU only
    probe = (
        "import os\n"
        "env = getattr(os, 'environ')\n"
        "assert 'ANTHROPIC_API_KEY' not in env, 'leaked to the child'\n"
        "assert 'CUDA_DEVICE_MAX_CONNECTIONS' not in env, 'not the judge\\'s setting'\n"
        "try:\n"
        "    worker_env = open(f'/proc/{os.getppid()}/environ', 'rb').read()\n"
        "except PermissionError:  # in its own user namespace the child cannot read it at all\n"
        "    worker_env = b''\n"
        "assert b'sk-must-not-leak' not in worker_env, 'leaked to the worker'\n"
        "assert env['HOME'] == os.getcwd()\n"
    )
    unguarded = cpu_settings(workers_per_device=1, integrity=IntegritySettings(enabled=False))

    async def run():
        async with LocalJudge(unguarded, home=tmp_path) as judge:
            return await judge.evaluate(SOFTMAX, probe + softmax_solution())

    result = loop_thread.run(run())
    assert result.status is Status.CORRECT, result.message


def test_cancelling_an_evaluation_kills_it_and_frees_the_worker(loop_thread, tmp_path):
    async def run():
        async with LocalJudge(cpu_settings(workers_per_device=1), home=tmp_path) as judge:
            hanging = asyncio.create_task(
                judge.evaluate(SOFTMAX, module("while True:\n    pass"), timeout_s=120)
            )
            await asyncio.sleep(1.0)
            hanging.cancel()
            with pytest.raises(asyncio.CancelledError):
                await hanging
            started = time.monotonic()
            result = await judge.evaluate(SOFTMAX, softmax_solution())
            return result, time.monotonic() - started

    result, elapsed = loop_thread.run(run())
    assert result.status is Status.CORRECT
    assert elapsed < 10


def test_a_full_queue_is_refused_with_a_clear_error(loop_thread, tmp_path):
    async def run():
        settings = cpu_settings(workers_per_device=1, max_queue=1)
        async with LocalJudge(settings, home=tmp_path) as judge:
            hang = module("while True:\n    pass")
            running = asyncio.create_task(judge.evaluate(SOFTMAX, hang, timeout_s=2))
            await asyncio.sleep(0.5)  # taken by the worker
            queued = asyncio.create_task(judge.evaluate(SOFTMAX, hang, timeout_s=2))
            await asyncio.sleep(0.1)
            with pytest.raises(QueueFull, match="retry when some have finished"):
                await judge.evaluate(SOFTMAX, hang, timeout_s=2)
            return await running, await queued

    first, second = loop_thread.run(run())
    assert first.status is second.status is Status.TIMEOUT


def test_fresh_process_mode_gives_the_same_verdicts(loop_thread, tmp_path):
    async def run():
        settings = cpu_settings(workers_per_device=1, reuse_workers=False)
        async with LocalJudge(settings, home=tmp_path) as judge:
            good = await judge.evaluate(SOFTMAX, softmax_solution())
            bad = await judge.evaluate(SOFTMAX, module("os._exit(3)"))
            return good, bad

    good, bad = loop_thread.run(run())
    assert good.status is Status.CORRECT
    assert bad.status is Status.RUNTIME_ERROR


def test_a_broken_task_raises_task_error_with_its_line(cpu_judge):
    source = get_bundled_task("softmax").source.replace(
        "    return [torch.randn(batch_size, dim)]",
        "    return [torch.randn(batch_size, dim) @ None]",
    )
    task = parse_task(source, name="broken", path=Path("broken_task.py"))
    line = source.splitlines().index("    return [torch.randn(batch_size, dim) @ None]") + 1
    with pytest.raises(TaskError, match=f"broken_task.py:{line}"):
        cpu_judge.evaluate(task, softmax_solution())
    _still_serves(cpu_judge)


@pytest.mark.parametrize(
    ("returns", "error"),
    [
        ("torch.softmax(x, dim=-1) * float('nan')", "NonFiniteReference"),
        ("'softmax'", "UncomparableOutput"),
    ],
    ids=["nan", "str"],
)
def test_a_reference_no_output_can_match_is_the_tasks_fault(cpu_judge, returns, error):
    """A NaN reference let every output pass (a NaN difference is never over the tolerance),
    and a str one crashed the judge, which then blamed itself."""
    source = get_bundled_task("softmax").source
    assert "return torch.softmax(x, dim=-1)" in source
    task = parse_task(
        source.replace("return torch.softmax(x, dim=-1)", f"return {returns}"), name="odd"
    )
    with pytest.raises(TaskError, match=error):
        cpu_judge.evaluate(task, softmax_solution())
    _still_serves(cpu_judge)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("import torch\n", "import time\nimport torch\n\ntime.sleep(600)\n"),
        (
            "    return [torch.randn(batch_size, dim)]",
            "    import time\n    time.sleep(600)\n    return [torch.randn(batch_size, dim)]",
        ),
    ],
    ids=["import", "get_inputs"],
)
def test_a_task_too_slow_for_the_time_limit_is_the_tasks_fault(cpu_judge, old, new):
    """The time limit ran out in the task's own code, and the verdict said the kernel was
    loading and compiling: look for an endless loop in it."""
    source = get_bundled_task("softmax").source
    assert old in source
    task = parse_task(source.replace(old, new, 1), name="slow")
    with pytest.raises(TaskError, match="the task's own code was running"):
        cpu_judge.evaluate(task, softmax_solution(), timeout_s=8)
    _still_serves(cpu_judge)


def test_the_network_is_unreachable(unguarded_judge):
    """Past the source check and with the guard off, the empty network namespace still holds:
    a listening socket in this very process cannot be reached."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        forward = (
            f"socketserver.socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "return torch.softmax(x, -1)"
        )
        result = unguarded_judge.evaluate(SOFTMAX, module(forward, prelude="import socketserver"))
    if not result.environment.network_isolated:
        pytest.skip("this machine does not allow unprivileged user namespaces")
    assert result.status is Status.RUNTIME_ERROR, result.message
    assert "Network is unreachable" in result.message


def test_memory_beyond_the_limit_is_an_error_not_a_dead_machine(loop_thread, tmp_path):
    settings = cpu_settings(
        workers_per_device=1,
        integrity=IntegritySettings(enabled=False),
        sandbox=SandboxSettings(memory_limit_mb=1024),
    )
    hog = "big = torch.ones(4 * 2**30 // 4)\nreturn torch.softmax(x, -1)"

    async def run():
        async with LocalJudge(settings, home=tmp_path) as judge:
            return await judge.evaluate(SOFTMAX, module(hog))

    result = loop_thread.run(run())
    assert result.status is Status.RUNTIME_ERROR
    assert "memory" in result.message.lower()


def test_a_thread_bomb_hits_the_process_limit(loop_thread, tmp_path):
    settings = cpu_settings(
        workers_per_device=1,
        integrity=IntegritySettings(enabled=False),
        sandbox=SandboxSettings(max_processes=64),
    )
    bomb = (
        "import socketserver\nthreads = []\n"
        "for _ in range(100000):\n"
        "    t = socketserver.threading.Thread(target=time.sleep, args=(30,), daemon=True)\n"
        "    t.start()\n    threads.append(t)\n"
        "return torch.softmax(x, -1)"
    )

    async def run():
        async with LocalJudge(settings, home=tmp_path) as judge:
            return await judge.evaluate(SOFTMAX, module(bomb), timeout_s=60)

    result = loop_thread.run(run())
    assert result.status is Status.RUNTIME_ERROR, result.message
    assert "can't start new thread" in result.message
