"""What the worker tells the caller about a job's trusted process that ended without its
report."""

from __future__ import annotations

import os
import signal
import sys
import time

from adaexplore_mcp.judge.result import Phase
from adaexplore_mcp.judge.trusted.resident import printing_into
from adaexplore_mcp.judge.worker.processes import Forked, run_forked
from adaexplore_mcp.judge.worker.supervise import _exit, _reap_trusted, _Supervisor, _Tail


def _dies_soon(after_s: float) -> Forked:
    """A child that ends by SIGTERM ``after_s`` from now, as a trusted process whose report's
    pipe has just closed does a moment later."""
    pid = os.fork()
    if pid == 0:  # the child: nothing of pytest's runs here
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        time.sleep(after_s)
        os.kill(os.getpid(), signal.SIGTERM)
        os._exit(0)
    return Forked(role="trusted", pid=pid, output_fd=-1)


def test_a_crashed_trusted_process_is_given_time_to_say_how_it_ended():
    trusted = _dies_soon(0.2)
    _reap_trusted(trusted, "crashed")
    assert _exit(trusted).signal == "SIGTERM"


def test_a_trusted_process_still_at_work_is_not_waited_for():
    """Timed out or cancelled, it is killed with the job: no reason to wait for it here."""
    trusted = _dies_soon(5.0)
    started = time.monotonic()
    _reap_trusted(trusted, "timeout")
    assert time.monotonic() - started < 1.0 and trusted.status is None
    os.kill(trusted.pid, signal.SIGKILL)
    os.waitpid(trusted.pid, 0)


def test_what_a_crashed_trusted_process_printed_on_its_way_out_reaches_the_caller():
    """Its traceback comes after its report's pipe closed: read before it had exited, the
    error said only "crashed (signal None, exit code 70) in phase timing" (an H200 run with
    four calls a gate)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        time.sleep(0.2)
        os.write(write, b"Traceback (most recent call last): ... IndexError\n")
        os._exit(70)
    os.close(write)
    supervisor = _Supervisor.__new__(_Supervisor)
    supervisor.processes = [Forked(role="trusted", pid=pid, output_fd=read)]
    supervisor.tails = {"trusted": _Tail()}
    supervisor.limit, supervisor.flooded, supervisor.sandbox = 1 << 20, False, None
    supervisor.started, supervisor.startup_s = time.monotonic(), 0.0
    supervisor.last_phase, supervisor.task_running, supervisor.report = Phase.TIMING, False, None
    supervisor._loop = lambda: "crashed"  # type: ignore[method-assign]
    try:
        outcome = supervisor.run()
    finally:
        os.close(read)
    assert outcome.exit_code == 70
    assert "IndexError" in (outcome.judge_output_tail or "")


def test_a_trusted_process_that_crashes_in_a_job_prints_its_traceback_into_the_jobs_pipe():
    """Between jobs what it prints goes nowhere: its traceback, printed on its way out once the
    job had given its output pipe back, was lost (an H200 run with four calls a gate: "crashed
    (signal None, exit code 70) in phase timing", and nothing more)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: ends in run_forked, as the resident trusted process does
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__  # not pytest's capture

        def job() -> None:
            with printing_into(write):
                raise IndexError("a timed call's index")

        run_forked(job)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as pipe:
        printed = pipe.read().decode()
    assert os.WEXITSTATUS(status) == 70
    assert "IndexError: a timed call's index" in printed
