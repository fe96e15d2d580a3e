"""The worker's resident trusted process and, on a GPU, its null subject (``trusted.resident``).

Both are forks of the worker that run no user code, made once and kept for job after job of
the same device, so an evaluation makes only its user-code processes' CUDA contexts. The worker
retires the pair after ``MAX_JOBS`` jobs, after any job that did not end in a report (a
timeout, a cancellation, a crash: the pair may be stuck or damaged), and when a job needs
another device.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass

from adaexplore_mcp.judge.sandbox import limits, namespaces
from adaexplore_mcp.judge.settings import TimingSettings
from adaexplore_mcp.judge.trusted.diagnostics import dump_stacks_later
from adaexplore_mcp.judge.wire.frames import Channel, write_frame
from adaexplore_mcp.judge.wire.jobs import ChildJob, ResidentOrder
from adaexplore_mcp.judge.worker.processes import (
    USER_ROLES,
    Forked,
    Started,
    roles_for,
    run_forked,
)

MAX_JOBS = 200  # a bound on what a long-lived process could accumulate


@dataclass
class Handed:
    """A job given to the resident: the worker's ends of its pipes."""

    report_r: int
    trusted: Forked  # the resident, with this job's output pipe


def pair_key(device: str, gpu_lock: str | None, context_env: dict[str, str]) -> tuple:
    """What a job must share with a pair to be given to it: the device, the GPU's lock, and the
    environment the null subject made its context with."""
    return (device, gpu_lock, tuple(sorted(context_env.items())))


class ResidentPair:
    """One pair: the trusted process and (on a GPU) the null subject, with the null subject's
    panel (``trusted.null_panel``): processes like it that live only until the trusted process
    has timed them against it, and that the worker reaps like any other child of a job."""

    def __init__(
        self,
        device: str,
        gpu_lock: str | None,
        timing: TimingSettings,
        context_env: dict[str, str],
    ) -> None:
        self.key = pair_key(device, gpu_lock, context_env)
        self.jobs = 0
        self._handed_seq = -1
        self._reaped_seq = -1
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        gpu = device != "cpu"
        pair = socket.socketpair() if gpu else None
        panel = [socket.socketpair() for _ in range(timing.null_panel if gpu else 0)]
        self.pids: list[int] = []
        self.panel_pids: list[int] = []
        sys.stdout.flush()
        sys.stderr.flush()
        trusted = os.fork()
        if trusted == 0:
            null_end = pair[0] if pair else None
            ours = [end for end, _ in panel]
            _child(lambda: _trusted(theirs, null_end, ours, device, gpu_lock, timing))
        self.pids.append(trusted)
        if pair is not None:
            calibrator = os.fork()
            if calibrator == 0:
                _child(lambda: _calibrator(pair[1], gpu_lock, context_env))
            self.pids.append(calibrator)
        for _, member_end in panel:
            member = os.fork()
            if member == 0:
                _child(functools.partial(_calibrator, member_end, gpu_lock, context_env))
            self.panel_pids.append(member)
        for end in [*(pair or ()), *(end for ends in panel for end in ends)]:
            end.close()
        theirs.close()

    @property
    def pid(self) -> int:
        return self.pids[0]

    def alive(self) -> bool:
        for pid in self.pids:
            try:
                ended, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return False
            if ended:
                return False
        return True

    def hand(self, job: ChildJob, started: Started, task: Forked | None = None) -> Handed:
        """Give the resident ``job`` and the user-code processes of ``started``, and ``task``, a
        task process the worker keeps (``worker.kept``; its socket stays the worker's too). If
        the resident is gone, the job's report pipe ends without a report (the job ends as
        ``crashed``)."""
        job_r, job_w = os.pipe()
        report_r, report_w = os.pipe()
        out_r, out_w = os.pipe()
        sockets = dict(started.sockets)
        if task is not None:
            assert task.sock is not None
            sockets["task"] = task.sock
        roles = [role for role in USER_ROLES if role in sockets]
        self._handed_seq += 1
        order = ResidentOrder(
            kind="job",
            seq=self._handed_seq,
            roles=roles,  # type: ignore[arg-type]
            calibrated="calibrator" in roles_for(job),
            task_kept=task is not None,
            groups=_groups(started, task),
        )
        fds = [job_r, report_w, out_w, *(sockets[role].fileno() for role in roles)]
        try:
            socket.send_fds(self.control, [order.model_dump_json().encode()], fds)
            sent = True
        except OSError:
            sent = False
        for fd in (job_r, report_w, out_w):
            os.close(fd)
        started.let_go_of_sockets()
        if sent:
            with contextlib.suppress(OSError):  # a resident that died reads nothing
                write_frame(job_w, job)
        os.close(job_w)
        self.jobs += 1
        return Handed(report_r, Forked("trusted", self.pid, out_r))

    def reaped(self, *, before_current: bool = False) -> None:
        """Every process of the jobs handed so far (or, while a job runs, of those before it)
        is gone: their memory may be freed."""
        seq = self._handed_seq - 1 if before_current else self._handed_seq
        if self._reaped_seq < seq:
            order = ResidentOrder(kind="reaped", seq=seq)
            with contextlib.suppress(OSError):
                self.control.send(order.model_dump_json().encode())
            self._reaped_seq = seq

    def end(self) -> None:
        self.control.close()
        for pid in [*self.pids, *self.panel_pids]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


class Residents:
    """The worker's one pair at a time."""

    def __init__(self) -> None:
        self._pair: ResidentPair | None = None

    def for_job(self, job: ChildJob) -> ResidentPair:
        pair = self._pair
        context_env = limits.gpu_environment(job.device, job.sandbox.cuda_connections)
        key = pair_key(job.device, job.gpu_lock, context_env)
        if pair is not None and (pair.key != key or pair.jobs >= MAX_JOBS or not pair.alive()):
            self.retire()
            pair = None
        if pair is None:
            pair = self._pair = ResidentPair(job.device, job.gpu_lock, job.timing, context_env)
        return pair

    def pids(self) -> set[int]:
        return set(self._pair.pids) if self._pair is not None else set()

    def reaped(self, *, before_current: bool = False) -> None:
        if self._pair is not None:
            self._pair.reaped(before_current=before_current)

    def retire(self) -> None:
        if self._pair is not None:
            self._pair.end()
            self._pair = None


def _groups(started: Started, task: Forked | None) -> dict[str, int]:
    """Each user-code process's group: the process the worker forked leads it (``sandbox``)."""
    groups = {process.role: process.pid for process in started.processes}
    if task is not None:
        groups["task"] = task.pid
    return {role: pid for role, pid in groups.items() if role in USER_ROLES}


def _child(body: Callable[[], None]) -> None:
    """A forked process of the pair, in a session of its own: never returns."""

    def alone() -> None:
        os.setsid()
        limits.die_with_parent()
        namespaces.set_dumpable(False)
        dump_stacks_later(os.environ)
        body()

    run_forked(alone)


def _keep_only(fds: set[int]) -> None:
    for fd in range(3, limits._max_fd()):
        if fd not in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _made_under_lock(device: str, gpu_lock: str | None):
    """This process's CUDA context, made holding the GPU lock shared (no context is made while
    an evaluation times)."""
    import torch

    from adaexplore_mcp.judge.subject.loading import start_device
    from adaexplore_mcp.judge.trusted.gpulock import GpuLock

    if device == "cpu":
        return torch.device("cpu")
    hold = GpuLock(gpu_lock).shared() if gpu_lock else contextlib.nullcontext()
    with hold:
        return start_device(device)


def _trusted(
    control: socket.socket,
    calibrator: socket.socket | None,
    panel: list[socket.socket],
    device: str,
    gpu_lock: str | None,
    timing: TimingSettings,
) -> None:
    from adaexplore_mcp.judge.trusted.resident import serve

    null = os.open(os.devnull, os.O_WRONLY)  # until a job gives it an output pipe
    os.dup2(null, 1)
    os.dup2(null, 2)
    own = [control, *((calibrator,) if calibrator else ()), *panel]
    _keep_only({end.fileno() for end in own})
    torch_device = _made_under_lock(device, gpu_lock)
    serve(
        control,
        Channel(calibrator) if calibrator else None,
        torch_device,
        gpu_lock if device != "cpu" else None,
        panel=[Channel(end) for end in panel],
        timing=timing,
    )


def _calibrator(
    channel_end: socket.socket, gpu_lock: str | None, context_env: dict[str, str]
) -> None:
    from adaexplore_mcp.judge.trusted.calibrator import serve

    _keep_only({channel_end.fileno()})  # what it prints goes to the worker's own stderr
    # it stands in for a candidate's new context: made the way the candidate's is
    os.environ.update(context_env)
    _made_under_lock("cuda", gpu_lock)
    serve(Channel(channel_end))
