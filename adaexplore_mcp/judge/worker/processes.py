"""The user-code processes of one job, as the worker forks them: the candidate's process and
the task's process, each sandboxed (``judge.sandbox``) before it loads user code, each with a
socket to the trusted process and nothing else.

They are forks of the warm worker (torch and triton already imported), made from a ``ForkPlan``,
which holds only what a job's processes need before the job itself (the device, the sandbox,
the limits), so a set can be started ahead of its job (``worker.spares``): each process makes
its CUDA context and waits. The trusted process that runs the job (``worker.resident``) then
hands each one its part of it: the candidate never holds the task's source, nor the task's
process the candidate's code, and neither holds a seed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from adaexplore_mcp.judge import sandbox
from adaexplore_mcp.judge.sandbox import limits
from adaexplore_mcp.judge.trusted.diagnostics import dump_stacks_later, profiled
from adaexplore_mcp.judge.trusted.gpulock import GpuLock, shared_through
from adaexplore_mcp.judge.wire.frames import Channel, ChannelClosed
from adaexplore_mcp.judge.wire.jobs import ChildJob, DevicePrepared, handed_job_adapter
from adaexplore_mcp.judge.worker import triton_helpers


@dataclass
class Forked:
    """One forked process, as its parent (the worker) holds it."""

    role: str
    pid: int
    output_fd: int  # the read end of its stdout/stderr
    setup_fd: int | None = None  # the read end of its sandbox report, for user-code processes
    status: int | None = None
    sock: socket.socket | None = None  # the trusted end of its socket, once out of its set
    scratch: str | None = None  # its real work/ and tmp/ when it has no private view

    def alive(self) -> bool:
        try:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # reaped already
            return False
        return not pid

    def end(self) -> None:
        """Kill it (and whatever it started) and close the worker's ends."""
        limits.kill_group(self.pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        for fd in (self.output_fd, self.setup_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if self.sock is not None:
            self.sock.close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            with contextlib.suppress(OSError):  # its set's directory, once the last one is gone
                os.rmdir(os.path.dirname(self.scratch))


@dataclass
class ForkPlan:
    job: ChildJob  # a template: only the fields of ``template_of``
    timeout_s: float
    fallback_root: str
    private_dirs: tuple[str, ...]
    env: dict[str, str]
    roles: tuple[str, ...] = field(default_factory=tuple)
    triton_helpers: dict[str, bytes] = field(default_factory=dict)  # ``triton_helpers.build``

    def key(self) -> str:
        """Two jobs whose plans have the same key can run in the same processes."""
        return f"{self.timeout_s!r} {self.roles} {self.kind_key()}"

    def kind_key(self) -> str:
        """The key but for the roles: processes of two plans of one kind are interchangeable."""
        return f"{self.timeout_s!r} {self.job.model_dump_json()}"

    def without(self, role: str) -> ForkPlan:
        """The same plan with no process of ``role``."""
        return replace(self, roles=tuple(r for r in self.roles if r != role))


def template_of(job: ChildJob) -> ChildJob:
    """What a job's processes need before the job: no code, no task, nothing secret."""
    return ChildJob(
        kind=job.kind,
        device=job.device,
        sandbox=job.sandbox,
        output_limit_bytes=job.output_limit_bytes,
        cache_dir=job.cache_dir,
        gpu_lock=job.gpu_lock,
    )


@dataclass
class Started:
    """A job's user-code processes, forked, and the trusted ends of their sockets (handed to the
    resident trusted process with the job, ``worker.resident``)."""

    plan: ForkPlan
    processes: list[Forked]
    sockets: dict[str, socket.socket]  # role -> the trusted end of that process's socket

    def alive(self) -> bool:
        return all(process.alive() for process in self.processes)

    def detach(self, role: str) -> Forked | None:
        """Take ``role``'s process out of the set, with the trusted end of its socket
        (``Forked.sock``): the set's end no longer ends it."""
        process = next((p for p in self.processes if p.role == role), None)
        if process is None:
            return None
        self.processes.remove(process)
        process.sock = self.sockets.pop(role)
        return process

    def let_go_of_sockets(self) -> None:
        """The worker's copies, once the trusted process holds its own."""
        for sock in self.sockets.values():
            sock.close()
        self.sockets = {}

    def end(self) -> None:
        """Kill every process of the set and close the worker's ends."""
        self.let_go_of_sockets()
        for process in self.processes:
            process.end()


def roles_for(job: ChildJob) -> tuple[str, ...]:
    """The processes a job talks to, the trusted one first."""
    gpu = job.device != "cpu"
    if job.kind == "probe":
        return ("trusted",)
    if job.kind == "eval":
        return ("trusted", "candidate", "task", *(("calibrator",) if gpu else ()))
    if job.kind == "baseline":
        return ("trusted", "task", "calibrator")
    return ("trusted", "task")


USER_ROLES = ("candidate", "task")


def start(plan: ForkPlan) -> Started:
    """Fork the plan's user-code processes. Each sets up its sandbox, makes its CUDA context
    (holding the GPU lock shared, so that no context is made while an evaluation times), says
    so on its socket and waits for its part of the job."""
    pairs = {role: socket.socketpair() for role in plan.roles if role in USER_ROLES}
    forked: list[Forked] = []
    for role, (_, theirs) in pairs.items():
        out_r, out_w = os.pipe()
        setup_r, setup_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(plan, role, theirs, out_w, setup_w)
        os.close(out_w)
        os.close(setup_w)
        forked.append(Forked(role, pid, out_r, setup_r, scratch=_scratch(plan, role)))
    for _, theirs in pairs.values():
        theirs.close()
    return Started(plan, forked, {role: ours for role, (ours, _) in pairs.items()})


def _scratch(plan: ForkPlan, role: str) -> str:
    """A process's own directory under its set's: it goes with the process, which may outlive
    its set (``worker.kept``, ``worker.spares``)."""
    return os.path.join(plan.fallback_root, role)


def _child(plan: ForkPlan, role: str, theirs: socket.socket, out_w: int, setup_w: int) -> None:
    run_forked(lambda: _user_code(plan, role, theirs, out_w, setup_w))


def run_forked(body: Callable[[], None]) -> None:
    """The life of a process the worker forked: ``body``, then exit; never returns."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        body()
    except sandbox.SandboxUnavailable as exc:
        sandbox.fail_hard(str(exc))
    except BaseException:
        code = 70
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


def _user_code(plan: ForkPlan, role: str, theirs: socket.socket, out_w: int, setup_w: int) -> None:
    """The candidate's or the task's process: sandbox first, then its CUDA context, then its
    harness."""
    job = plan.job
    settings = job.sandbox
    cpu_s = int(plan.timeout_s * settings.cpu_time_factor) + 10
    gpu_lock = GpuLock(job.gpu_lock).files() if job.device != "cpu" and job.gpu_lock else None
    spec = sandbox.Spec(
        socket_fd=theirs.fileno(),
        output_fd=out_w,
        setup_fd=setup_w,
        limits=limits.Limits(
            file_bytes=settings.cache_limit_mb * 2**20,
            cpu_seconds=cpu_s,
            memory_bytes=settings.memory_limit_mb * 2**20 if settings.memory_limit_mb else None,
            extra_processes=settings.max_processes,
        ),
        env=plan.env | limits.gpu_environment(job.device, settings.cuda_connections),
        private_dirs=plan.private_dirs,
        fallback_root=_scratch(plan, role),
        workdir_bytes=job.output_limit_bytes,
        tmp_bytes=settings.cache_limit_mb * 2**20,
        writable_binds=_binds(job, role),
        network=settings.isolate_network,
        pids=settings.pid_namespace,
        allow_processes=(
            settings.allow_processes
            if settings.allow_processes is not None
            else job.device != "cpu"  # Triton's GPU compiler runs ptxas and a C compiler
        ),
        mounts=settings.private_filesystem,
        required=settings.required,
        lock_fds=gpu_lock,
    )
    report = sandbox.enter(spec)  # closes every descriptor but these
    os.write(sandbox.SETUP_FD, report.model_dump_json().encode())
    os.close(sandbox.SETUP_FD)
    if plan.triton_helpers:
        with contextlib.suppress(OSError):  # without them Triton builds its own, as before
            triton_helpers.plant(plan.triton_helpers, os.environ["TRITON_CACHE_DIR"])
    dump_stacks_later(plan.env)
    channel = Channel(socket.socket(fileno=sandbox.SOCKET_FD))
    try:
        prepare_device(
            channel,
            job.device,
            sandbox.LOCK_FDS if gpu_lock else None,
            seal=lambda: sandbox.seal(spec, report),
        )
        job = channel.receive(handed_job_adapter)[0].job
    except ChannelClosed:
        return  # the trusted process let this set go unused
    if role == "candidate":
        from adaexplore_mcp.judge.candidate.harness import CandidateSubject

        CandidateSubject(job, channel, os.getcwd()).run()
    else:
        from adaexplore_mcp.judge.reference.harness import serve

        serve(job, channel, each_job=lambda: profiled(plan.env, role))


def prepare_device(
    channel: Channel,
    device: str,
    lock_fds: tuple[int, int] | None,
    *,
    seal: Callable[[], None] = lambda: None,
) -> None:
    """Make this process's CUDA context before any user code loads, holding the GPU lock shared
    (``lock_fds``) meanwhile, then ``seal`` the sandbox (``sandbox.seal``: file locks are
    no-ops from then on), and say so. The lock's files are closed before the job comes."""
    from adaexplore_mcp.judge.subject.loading import start_device

    if lock_fds is None:
        start_device(device)
    else:
        try:
            with shared_through(*lock_fds):
                start_device(device)
        finally:
            for fd in lock_fds:
                os.close(fd)
    seal()
    channel.send(DevicePrepared())


def _binds(job: ChildJob, role: str) -> tuple[tuple[str, str], ...]:
    """The task's process of a baseline job keeps torch.compile's cache for this task."""
    if role == "task" and job.kind == "baseline" and job.cache_dir:
        os.makedirs(job.cache_dir, exist_ok=True)
        return ((job.cache_dir, os.path.join(sandbox.TMPDIR, "inductor")),)
    return ()
