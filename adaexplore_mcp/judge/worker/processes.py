"""The processes of one job, as the worker forks them.

- the trusted process (``trusted.main``): imports neither the task nor the candidate, draws
  every seed, drives the others, keeps the clock and writes the only report, on a pipe that no
  other process holds;
- the candidate's process and the task's process: each sandboxed (``judge.sandbox``) before it
  loads user code, each with a socket to the trusted process and nothing else;
- on a GPU, the null subject (``trusted.calibrator``), trusted, for the timing's calibration.

Each is a fork of the warm worker (torch and triton already imported). They are forked from a
``Plan``, which holds only what a job's processes need before the job itself (the device, the
sandbox, the limits), so a set can be started ahead of its job (``worker.spares``): each process
makes its CUDA context and waits. The job then reaches the trusted process on a pipe, and the
trusted process hands each user-code process its part of it: the candidate never holds the
task's source, nor the task's process the candidate's code.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import traceback
from dataclasses import dataclass, field

from adaexplore_mcp.judge import sandbox
from adaexplore_mcp.judge.sandbox import limits
from adaexplore_mcp.judge.wire.frames import Channel, ChannelClosed, read_frame, write_frame
from adaexplore_mcp.judge.wire.jobs import (
    ChildJob,
    DevicePrepared,
    HandedJob,
    handed_job_adapter,
    prepare_adapter,
)
from adaexplore_mcp.judge.worker import triton_helpers


@dataclass
class Forked:
    """One forked process, as its parent (the worker) holds it."""

    role: str
    pid: int
    output_fd: int  # the read end of its stdout/stderr
    setup_fd: int | None = None  # the read end of its sandbox report, for user-code processes
    status: int | None = None


@dataclass
class Plan:
    job: ChildJob  # a template: only the fields of ``template_of``
    timeout_s: float
    fallback_root: str
    private_dirs: tuple[str, ...]
    env: dict[str, str]
    roles: tuple[str, ...] = field(default_factory=tuple)
    triton_helpers: dict[str, bytes] = field(default_factory=dict)  # ``triton_helpers.build``

    def key(self) -> str:
        """Two jobs whose plans have the same key can run in the same processes."""
        return f"{self.timeout_s!r} {self.roles} {self.job.model_dump_json()}"


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
    """A job's processes, forked, and the worker's ends of their pipes."""

    plan: Plan
    processes: list[Forked]
    report_r: int  # the trusted process's frames
    hold_w: int  # closed once the others are ended: the trusted process may then exit
    job_w: int  # the job, written once, to the trusted process

    def alive(self) -> bool:
        for process in self.processes:
            try:
                pid, _ = os.waitpid(process.pid, os.WNOHANG)
            except ChildProcessError:  # reaped already
                return False
            if pid:
                return False
        return True

    def hand_over(self, job: ChildJob) -> None:
        """Send the job to the trusted process. If that process is gone, its report pipe says
        so (the job ends as ``crashed``)."""
        with contextlib.suppress(OSError):
            write_frame(self.job_w, job)
        os.close(self.job_w)
        self.job_w = -1

    def end(self) -> None:
        """Kill every process of the set and close the worker's ends."""
        for fd in (self.hold_w, self.job_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.hold_w = self.job_w = -1
        for process in self.processes:
            limits.kill_group(process.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            for fd in (process.output_fd, process.setup_fd):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
        with contextlib.suppress(OSError):
            os.close(self.report_r)


def roles_for(job: ChildJob) -> tuple[str, ...]:
    gpu = job.device != "cpu"
    if job.kind == "probe":
        return ("trusted",)
    if job.kind == "eval":
        return ("trusted", "candidate", "task", *(("calibrator",) if gpu else ()))
    if job.kind == "baseline":
        return ("trusted", "task", "calibrator")
    return ("trusted", "task")


def start(plan: Plan) -> Started:
    """Fork every process of the plan. The trusted one reads its job from a pipe, writes frames
    to another and, after its report, waits until the worker has ended the others (so its GPU
    lock outlives them)."""
    report_r, report_w = os.pipe()
    hold_r, hold_w = os.pipe()
    job_r, job_w = os.pipe()
    pairs = {role: socket.socketpair() for role in plan.roles if role != "trusted"}
    forked: list[Forked] = []
    for role in plan.roles:
        out_r, out_w = os.pipe()
        setup_r, setup_w = os.pipe() if role in ("candidate", "task") else (None, None)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(plan, role, pairs, out_w, setup_w, (job_r, report_w, hold_r))
        os.close(out_w)
        if setup_w is not None:
            os.close(setup_w)
        forked.append(Forked(role, pid, out_r, setup_r))
    for ours, theirs in pairs.values():
        ours.close()
        theirs.close()
    for fd in (job_r, report_w, hold_r):
        os.close(fd)
    return Started(plan, forked, report_r, hold_w, job_w)


def _child(plan, role, pairs, out_w, setup_w, trusted_fds) -> None:
    """The forked process: never returns."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if role == "trusted":
            _trusted(plan, pairs, out_w, *trusted_fds)
        elif role == "calibrator":
            _calibrator(pairs, out_w, plan)
        else:
            _user_code(plan, role, pairs, out_w, setup_w)
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


def _dump_stacks_later(plan: Plan) -> None:
    """A diagnostic (ADAEXPLORE_DEBUG_STACKS_S in the worker's environment): every process of
    a job writes its threads' stacks into its output every that many seconds."""
    seconds = float(plan.env.get("ADAEXPLORE_DEBUG_STACKS_S") or 0)
    if seconds > 0:
        import faulthandler

        faulthandler.dump_traceback_later(seconds, repeat=True, file=sys.stderr)


@contextlib.contextmanager
def _profiled(plan: Plan, role: str):
    """A diagnostic (ADAEXPLORE_DEBUG_PROFILE=N in the worker's environment): the trusted and
    the task's processes run under cProfile and print their N costliest functions, by time
    including callees, at the end (the worker prints every process's output when a debug
    variable is set). Not the candidate's: its audit hook refuses a profiler."""
    top = int(plan.env.get("ADAEXPLORE_DEBUG_PROFILE") or 0)
    if top <= 0:
        yield
        return
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        stats = pstats.Stats(profile)
        rows = sorted(stats.stats.items(), key=lambda item: -item[1][3])[:top]  # type: ignore[attr-defined]
        lines = [f"--- profile of the {role}'s process: cumulative s, own s, calls, function"]
        for (path, line, name), (_, calls, own, cumulative, _) in rows:
            where = f"{os.path.basename(path)}:{line}" if line else path[:20]
            lines.append(f"{cumulative:7.3f} {own:7.3f} {calls:6d} {where}({name[:30]})")
        print("\n".join(lines), flush=True)


def _keep_only(fds: set[int]) -> None:
    for fd in range(3, limits._max_fd()):
        if fd not in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _trusted(plan: Plan, pairs, out_w: int, job_r: int, report_w: int, hold_r: int) -> None:
    from adaexplore_mcp.judge.trusted.main import prepare, run
    from adaexplore_mcp.judge.trusted.report import Reporter

    os.setsid()
    limits.die_with_parent()
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    mine = {role: ours for role, (ours, _) in pairs.items()}
    _keep_only({job_r, report_w, hold_r, *(s.fileno() for s in mine.values())})
    _dump_stacks_later(plan)
    channels = {role: Channel(sock) for role, sock in mine.items()}
    prepare(plan.job, channels)
    frame = read_frame(job_r)
    if frame is None:
        return  # the worker let this set go unused
    os.close(job_r)
    job = ChildJob.model_validate_json(frame[0])
    for role in ("candidate", "task"):
        if role in channels:
            with contextlib.suppress(ChannelClosed):  # a process that is gone: found as such
                channels[role].send(HandedJob(job=_part_for(role, job)))
    with _profiled(plan, "trusted"):
        run(
            job,
            Reporter(report_w),
            candidate=channels.get("candidate"),
            task=channels.get("task"),
            calibrator=channels.get("calibrator"),
        )
    os.read(hold_r, 1)  # until the worker has ended the others


def _calibrator(pairs, out_w: int, plan: Plan) -> None:
    from adaexplore_mcp.judge.trusted.calibrator import serve

    os.setsid()
    limits.die_with_parent()
    _, theirs = pairs["calibrator"]
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    _keep_only({theirs.fileno()})
    _dump_stacks_later(plan)
    channel = Channel(theirs)
    with contextlib.suppress(ChannelClosed):
        prepare_device(channel, plan.job.device)
        serve(channel)


def _user_code(plan: Plan, role: str, pairs, out_w: int, setup_w: int | None) -> None:
    """The candidate's or the task's process: sandbox first, then its harness."""
    job = plan.job
    _, theirs = pairs[role]
    settings = job.sandbox
    cpu_s = int(plan.timeout_s * settings.cpu_time_factor) + 10
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
        env=dict(plan.env),
        private_dirs=plan.private_dirs,
        fallback_root=os.path.join(plan.fallback_root, role),
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
    )
    report = sandbox.enter(spec)  # closes every descriptor but these three
    os.write(sandbox.SETUP_FD, report.model_dump_json().encode())
    os.close(sandbox.SETUP_FD)
    if plan.triton_helpers:
        with contextlib.suppress(OSError):  # without them Triton builds its own, as before
            triton_helpers.plant(plan.triton_helpers, os.environ["TRITON_CACHE_DIR"])
    _dump_stacks_later(plan)
    channel = Channel(socket.socket(fileno=sandbox.SOCKET_FD))
    try:
        prepare_device(channel, job.device)  # while the job is still to come
        job = channel.receive(handed_job_adapter)[0].job
    except ChannelClosed:
        return  # the trusted process ended before the job came: this set went unused
    if role == "candidate":
        from adaexplore_mcp.judge.candidate.harness import Candidate

        Candidate(job, channel, os.getcwd()).run()
    else:
        from adaexplore_mcp.judge.reference.harness import Reference

        with _profiled(plan, role):
            Reference(job, channel).run()


def prepare_device(channel: Channel, device: str) -> None:
    """Make this process's CUDA context when the trusted process says (it holds the GPU lock)."""
    from adaexplore_mcp.judge.subject.loading import start_device

    channel.receive(prepare_adapter)
    start_device(device)
    channel.send(DevicePrepared())


def _part_for(role: str, job: ChildJob) -> ChildJob:
    """The candidate's process is not given the task, nor the task's the candidate's code."""
    if role == "candidate":
        return job.model_copy(update={"task": None})
    return job.model_copy(update={"code": None})


def _binds(job: ChildJob, role: str) -> tuple[tuple[str, str], ...]:
    """The task's process of a baseline job keeps torch.compile's cache for this task."""
    if role == "task" and job.kind == "baseline" and job.cache_dir:
        os.makedirs(job.cache_dir, exist_ok=True)
        return ((job.cache_dir, os.path.join(sandbox.TMPDIR, "inductor")),)
    return ()
