"""The processes of one job, as the worker forks them.

- the trusted process (``trusted.main``): imports neither the task nor the candidate, draws
  every seed, drives the others, keeps the clock and writes the only report, on a pipe that no
  other process holds;
- the candidate's process and the task's process: each sandboxed (``judge.sandbox``) before it
  loads user code, each with a socket to the trusted process and nothing else;
- on a GPU, the null subject (``trusted.calibrator``), trusted, for the timing's calibration.

Each is a fork of the warm worker (torch and triton already imported), so starting one costs a
fork and, on a GPU, a CUDA context, all of them at once.
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
from adaexplore_mcp.judge.wire.frames import Channel
from adaexplore_mcp.judge.wire.jobs import ChildJob


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
    job: ChildJob
    timeout_s: float
    fallback_root: str
    private_dirs: tuple[str, ...]
    env: dict[str, str]
    roles: tuple[str, ...] = field(default_factory=tuple)


def roles_for(job: ChildJob) -> tuple[str, ...]:
    gpu = job.device != "cpu"
    if job.kind == "probe":
        return ("trusted",)
    if job.kind == "eval":
        return ("trusted", "candidate", "task", *(("calibrator",) if gpu else ()))
    if job.kind == "baseline":
        return ("trusted", "task", "calibrator")
    return ("trusted", "task")


def start(plan: Plan, report_w: int, hold_r: int) -> list[Forked]:
    """Fork every process of the job; the trusted one writes frames to ``report_w`` and waits
    on ``hold_r`` after its report (so its GPU lock outlives the user-code processes)."""
    pairs = {role: socket.socketpair() for role in plan.roles if role != "trusted"}
    forked: list[Forked] = []
    for role in plan.roles:
        out_r, out_w = os.pipe()
        setup_r, setup_w = os.pipe() if role in ("candidate", "task") else (None, None)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(plan, role, pairs, out_w, setup_w, report_w, hold_r)
        os.close(out_w)
        if setup_w is not None:
            os.close(setup_w)
        forked.append(Forked(role, pid, out_r, setup_r))
    for ours, theirs in pairs.values():
        ours.close()
        theirs.close()
    return forked


def _child(plan, role, pairs, out_w, setup_w, report_w, hold_r) -> None:
    """The forked process: never returns."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if role == "trusted":
            _trusted(plan, pairs, out_w, report_w, hold_r)
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


def _trusted(plan: Plan, pairs, out_w: int, report_w: int, hold_r: int) -> None:
    from adaexplore_mcp.judge.trusted.main import run
    from adaexplore_mcp.judge.trusted.report import Reporter

    os.setsid()
    limits.die_with_parent()
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    mine = {role: ours for role, (ours, _) in pairs.items()}
    _keep_only({report_w, hold_r, *(s.fileno() for s in mine.values())})
    _dump_stacks_later(plan)
    channels = {role: Channel(sock) for role, sock in mine.items()}
    with _profiled(plan, "trusted"):
        run(
            plan.job,
            Reporter(report_w),
            candidate=channels.get("candidate"),
            task=channels.get("task"),
            calibrator=channels.get("calibrator"),
        )
    os.read(hold_r, 1)  # until the worker has ended the others


def _calibrator(pairs, out_w: int, plan: Plan | None = None) -> None:
    from adaexplore_mcp.judge.trusted.calibrator import serve

    os.setsid()
    limits.die_with_parent()
    _, theirs = pairs["calibrator"]
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    _keep_only({theirs.fileno()})
    if plan is not None:
        _dump_stacks_later(plan)
    serve(Channel(theirs))


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
    _dump_stacks_later(plan)
    channel = Channel(socket.socket(fileno=sandbox.SOCKET_FD))
    if role == "candidate":
        from adaexplore_mcp.judge.candidate.harness import Candidate

        Candidate(job, channel, os.getcwd()).run()
    else:
        from adaexplore_mcp.judge.reference.harness import Reference

        with _profiled(plan, role):
            Reference(job, channel).run()


def _binds(job: ChildJob, role: str) -> tuple[tuple[str, str], ...]:
    """The task's process of a baseline job keeps torch.compile's cache for this task."""
    if role == "task" and job.kind == "baseline" and job.cache_dir:
        os.makedirs(job.cache_dir, exist_ok=True)
        return ((job.cache_dir, os.path.join(sandbox.TMPDIR, "inductor")),)
    return ()
