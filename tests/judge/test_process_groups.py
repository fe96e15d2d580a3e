"""Stopping a job's user-code processes while the judge calibrates its clock
(``sandbox.limits.groups_stopped``), and the groups the worker hands the trusted process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from adaexplore_mcp.judge.sandbox.limits import groups_stopped
from adaexplore_mcp.judge.worker.processes import Forked, ForkPlan, Started
from adaexplore_mcp.judge.worker.resident import _groups

# a process that writes a byte every millisecond, and a thread that does too
TICKING = """
import os, threading, time
def tick():
    while True:
        os.write(1, b"t")
        time.sleep(0.001)
threading.Thread(target=tick, daemon=True).start()
tick()
"""


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]


def _ticks(stream, seconds: float) -> int:
    os.set_blocking(stream.fileno(), False)
    time.sleep(seconds)
    return len(stream.read() or b"")


@pytest.fixture
def ticking():
    process = subprocess.Popen(
        [sys.executable, "-c", TICKING], stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert _ticks(process.stdout, 0.3) > 0
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_stopped_group_does_nothing_until_the_block_ends(ticking):
    with groups_stopped([ticking.pid]):
        time.sleep(0.05)  # what was already written before the stop
        _ticks(ticking.stdout, 0)
        assert _state(ticking.pid) == "T"
        assert _ticks(ticking.stdout, 0.2) == 0
    assert _ticks(ticking.stdout, 0.2) > 0
    assert _state(ticking.pid) != "T"


def test_a_stopped_group_goes_on_when_the_block_fails(ticking):
    with pytest.raises(RuntimeError), groups_stopped([ticking.pid]):
        raise RuntimeError("the calibration failed")
    assert _ticks(ticking.stdout, 0.2) > 0


def test_a_group_that_is_gone_is_said_so_and_the_others_go_on(ticking):
    """Nothing of a group that is gone can be stopped, and the caller must know it; the groups
    stopped before it are continued."""
    gone = subprocess.Popen([sys.executable, "-c", ""], start_new_session=True)
    gone.wait()
    with pytest.raises(ProcessLookupError), groups_stopped([ticking.pid, gone.pid]):
        pass
    assert _ticks(ticking.stdout, 0.2) > 0


@pytest.mark.parametrize("pgid", [0, 1, os.getpgrp()])
def test_no_group_but_a_jobs_own_is_ever_stopped(pgid):
    """0 names the caller's own group to the kernel, and 1 is init's."""
    with pytest.raises(ValueError), groups_stopped([pgid]):
        pass


def test_a_process_that_leads_no_group_is_refused():
    """A pid taken for a group that is not one would stop nothing, silently."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(ValueError, match="does not lead"), groups_stopped([process.pid]):
            pass
    finally:
        process.kill()
        process.wait()


def test_the_trusted_process_is_told_each_user_code_processs_group():
    """The process the worker forks for a role leads that role's group (``sandbox.enter``
    starts a session); a kept task process's group replaces the set's."""
    plan = ForkPlan.__new__(ForkPlan)
    started = Started(plan, [Forked("candidate", 101, -1), Forked("task", 102, -1)], {})
    assert _groups(started, None) == {"candidate": 101, "task": 102}
    kept = Forked("task", 303, -1, sock=socket.socket())
    try:
        assert _groups(Started(plan, [Forked("candidate", 101, -1)], {}), kept) == {
            "candidate": 101,
            "task": 303,
        }
    finally:
        kept.sock.close()
