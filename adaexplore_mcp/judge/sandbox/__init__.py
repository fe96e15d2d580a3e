"""The sandbox of a process that runs user code (a candidate, or a task), set up by the process
itself right after the worker forks it and before any user code is loaded.

In order: its own session; stdin from /dev/null, stdout and stderr into a pipe the worker reads,
its socket to the trusted process as fd 3 and no other descriptor; new user, mount, IPC, network
and (optionally) PID namespaces; a private, read-only view of the filesystem with writable,
size-limited scratch space (``filesystem``), or Landlock where no mount namespace can be made;
resource limits; a scrubbed environment; no capabilities; and a seccomp filter (``seccomp``).
What took effect is reported (``SandboxReport``), and with ``required`` a process that cannot
isolate its filesystem or filter its system calls refuses to run user code at all.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import sys
import tempfile
from dataclasses import dataclass, field

from adaexplore_mcp.judge.result import SandboxReport
from adaexplore_mcp.judge.sandbox import filesystem, landlock, limits, namespaces, seccomp

SOCKET_FD = 3
SETUP_FD = 4
LOCK_FDS = (5, 6)  # the GPU lock's files, only until the process has made its CUDA context
WORKDIR = "/tmp/adaexplore/work"
TMPDIR = "/tmp/adaexplore/tmp"


class SandboxUnavailable(RuntimeError):
    pass


@dataclass(frozen=True)
class Spec:
    socket_fd: int
    output_fd: int
    setup_fd: int
    limits: limits.Limits
    env: dict[str, str]
    private_dirs: tuple[str, ...] = ()
    fallback_root: str = ""  # real directories for work/ and tmp/ when no private view exists
    workdir_bytes: int = 16 * 2**20
    tmp_bytes: int = 4 * 2**30
    writable_binds: tuple[tuple[str, str], ...] = ()
    network: bool = True
    pids: bool = True
    allow_processes: bool = False
    mounts: bool = True
    required: bool = True
    keep_paths: tuple[str, ...] = field(default_factory=tuple)
    lock_fds: tuple[int, int] | None = None  # kept as ``LOCK_FDS``


def enter(spec: Spec) -> SandboxReport:
    """Called in a freshly forked, single-threaded child; returns in the process that will run
    user code (with a PID namespace, a child of this one: this one only waits for it)."""
    os.setsid()
    limits.die_with_parent()
    os.umask(0o077)
    keep = {SOCKET_FD: spec.socket_fd, SETUP_FD: spec.setup_fd}
    if spec.lock_fds is not None:
        keep.update(zip(LOCK_FDS, spec.lock_fds, strict=True))
    limits.redirect(stdout_fd=spec.output_fd, keep=keep)
    report = SandboxReport(processes_allowed=spec.allow_processes)

    namespaces.set_dumpable(True)  # writing its own uid_map needs it; set back below
    flags, report.notes = namespaces.enter(network=spec.network, pids=spec.pids)
    namespaces.set_dumpable(False)
    report.user_namespace = bool(flags & namespaces.CLONE_NEWUSER)
    report.network_isolated = bool(flags & namespaces.CLONE_NEWNET)

    workdir, tmpdir = WORKDIR, TMPDIR
    if spec.mounts and flags & namespaces.CLONE_NEWNS:
        try:
            plan = filesystem.plan_for(
                private_dirs=list(spec.private_dirs),
                workdir=WORKDIR,
                workdir_bytes=spec.workdir_bytes,
                tmp_bytes=spec.tmp_bytes,
                extra_keep=list(spec.keep_paths),
                writable_binds=list(spec.writable_binds),
            )
            filesystem.build(plan)
            report.private_filesystem = True
        except OSError as exc:
            report.notes.append(f"no private filesystem view ({exc})")
    if not report.private_filesystem:
        workdir = os.path.join(spec.fallback_root, "work")
        tmpdir = os.path.join(spec.fallback_root, "tmp")
        for path in (workdir, tmpdir):
            os.makedirs(path, exist_ok=True)
        try:
            landlock.confine_writes([workdir, tmpdir, "/dev"])
            report.landlock = True
        except OSError as exc:
            report.notes.append(f"writes not confined ({exc})")

    if flags & namespaces.CLONE_NEWPID:
        _become_pid_one(report, spec)

    limits.apply(spec.limits)
    os.environ.clear()
    os.environ.update(_scratch_env(workdir, tmpdir) | spec.env)
    # the environment's switch is read at start-up only, and this process was forked: an import
    # from source would try to cache bytecode beside a read-only package
    sys.dont_write_bytecode = True
    tempfile.tempdir = None  # what the parent cached before the fork: tempfile reads TMPDIR again
    os.makedirs(tmpdir, exist_ok=True)
    os.chdir(workdir)
    namespaces.drop_capabilities()
    if seccomp.supported():
        try:
            seccomp.install(allow_processes=spec.allow_processes)
            report.seccomp = True
        except OSError as exc:
            report.notes.append(f"no system-call filter ({exc})")
    if spec.required and not (report.private_filesystem or report.landlock):
        raise SandboxUnavailable("the filesystem could not be isolated: " + "; ".join(report.notes))
    if spec.required and not report.seccomp:
        raise SandboxUnavailable("no system-call filter: " + "; ".join(report.notes))
    return report


def seal(spec: Spec, report: SandboxReport) -> None:
    """The sandbox's last step, once the process has made its CUDA context (which takes the GPU
    lock with ``flock``) and before any user code loads: file locks made no-ops and file
    watches refused (``seccomp.install_sealed``), where the first filter is on."""
    if not report.seccomp:
        return
    try:
        seccomp.install_sealed()
    except OSError as exc:
        report.notes.append(f"file locks and watches not sealed ({exc})")
        if spec.required:
            raise SandboxUnavailable("no system-call filter: " + "; ".join(report.notes)) from exc


def _scratch_env(workdir: str, tmpdir: str) -> dict[str, str]:
    return {
        "HOME": workdir,
        "TMPDIR": tmpdir,
        "TRITON_CACHE_DIR": os.path.join(tmpdir, "triton"),
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(tmpdir, "inductor"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _become_pid_one(report: SandboxReport, spec: Spec) -> None:
    """In a new PID namespace, the first process forked is the namespace's init, which the
    kernel protects from signals sent from inside (a kernel's own ``abort()`` would not work
    there). So: this process forks that init, which mounts the namespace's /proc, forks the
    process that goes on to run user code, reaps whatever is left behind, and passes on how it
    ended; this process, outside the namespace, ends the same way for the worker to see."""
    status_r, status_w = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(status_r)
        limits.die_with_parent()
        if report.private_filesystem:
            try:
                filesystem.mount_proc()
            except OSError as exc:
                report.notes.append(f"no /proc of its own ({exc})")
        report.pid_namespace = True
        user = os.fork()
        if user == 0:
            os.close(status_w)
            limits.die_with_parent()
            return  # the process that runs user code
        _close_job_fds(spec)
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                status = 0
                break
            if pid == user:
                break
        os.write(status_w, struct.pack("i", status))
        os._exit(0)
    os.close(status_w)
    _close_job_fds(spec)
    while True:
        try:
            os.waitpid(init, 0)
            break
        except InterruptedError:
            continue
    data = os.read(status_r, 4)
    status = struct.unpack("i", data)[0] if len(data) == 4 else 0
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _close_job_fds(spec: Spec) -> None:
    """A process that only waits holds none of the job's descriptors: the socket must close
    as soon as the process that runs user code ends. (``LOCK_FDS`` only where they were kept:
    otherwise those numbers may be this process's own pipe.)"""
    kept = LOCK_FDS if spec.lock_fds is not None else ()
    for fd in (0, 1, 2, SOCKET_FD, SETUP_FD, *kept):
        with contextlib.suppress(OSError):
            os.close(fd)


def fail_hard(message: str) -> None:
    """The sandbox could not be set up: say so on stderr (the worker keeps it) and stop."""
    sys.stderr.write(f"adaexplore sandbox: {message}\n")
    sys.stderr.flush()
    os._exit(71)
