"""Before its job, a user-code process makes its CUDA context holding the GPU lock shared (no
context is made while another evaluation times), lets go of the lock's files before any user
code could use them, and says it is ready."""

from __future__ import annotations

import fcntl
import os
import select
import socket

import pytest

from adaexplore_mcp.judge.trusted.gpulock import GpuLock
from adaexplore_mcp.judge.wire.frames import Channel
from adaexplore_mcp.judge.wire.jobs import prepared_adapter
from adaexplore_mcp.judge.worker import processes


def _exclusive_free(base: str) -> bool:
    fd = os.open(base + ".lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_the_context_is_made_under_the_shared_lock_whose_files_are_then_closed(
    tmp_path, monkeypatch
):
    base = str(tmp_path / "gpu0")
    lock_fds = GpuLock(base).files()
    seen: list[bool] = []

    def start_device(name: str):
        seen.append(_exclusive_free(base))  # a timing could not start now

    monkeypatch.setattr("adaexplore_mcp.judge.subject.loading.start_device", start_device)
    ours, theirs = socket.socketpair()
    processes.prepare_device(Channel(theirs), "cuda", lock_fds)
    assert seen == [False]
    assert _exclusive_free(base)
    for fd in lock_fds:
        with pytest.raises(OSError):
            os.fstat(fd)
    assert Channel(ours).receive(prepared_adapter, timeout_s=5)[0].kind == "prepared"


def test_without_a_lock_the_process_only_makes_its_device(monkeypatch):
    made: list[str] = []
    monkeypatch.setattr(
        "adaexplore_mcp.judge.subject.loading.start_device", lambda name: made.append(name)
    )
    ours, theirs = socket.socketpair()
    processes.prepare_device(Channel(theirs), "cpu", None)
    assert made == ["cpu"]
    assert Channel(ours).receive(prepared_adapter, timeout_s=5)[0].kind == "prepared"


def test_the_sandbox_is_sealed_after_the_lock_is_let_go_and_before_ready(tmp_path, monkeypatch):
    """Sealed first, the GPU lock's flock would be a no-op, and a context could be made while
    another evaluation times: the seal comes once the lock's files are closed."""
    base = str(tmp_path / "gpu0")
    lock_fds = GpuLock(base).files()
    monkeypatch.setattr("adaexplore_mcp.judge.subject.loading.start_device", lambda name: None)
    ours, theirs = socket.socketpair()
    at_seal: list[tuple[bool, bool, bool]] = []

    def seal() -> None:
        closed = all(_closed(fd) for fd in lock_fds)
        ready_sent = bool(select.select([ours], [], [], 0)[0])
        at_seal.append((closed, _exclusive_free(base), ready_sent))

    processes.prepare_device(Channel(theirs), "cuda", lock_fds, seal=seal)
    assert at_seal == [(True, True, False)]
    assert Channel(ours).receive(prepared_adapter, timeout_s=5)[0].kind == "prepared"


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False
