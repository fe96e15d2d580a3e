"""Turns a freshly forked process into a sandbox for one candidate.

What is enforced here: its own session and process group (so the worker can kill everything it
started), no inherited file descriptors but the result pipe, stdin from /dev/null, stdout and
stderr into a size-capped file in a private temporary directory (never the worker's pipes), a
scrubbed environment, no core dumps, limits on file size, CPU time, private memory and process
count, an empty network namespace where the kernel allows unprivileged user namespaces, and a
umask that keeps its files private.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
from dataclasses import dataclass

OUTPUT_FILE = "output.log"
RESULT_FD = 3

# Variables a candidate may see; everything else (API keys, tokens, the user's paths) is dropped.
_KEPT_VARIABLES = (
    "PATH",
    "LANG",
    "LC_ALL",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "TRITON_INTERPRET",
    "TRITON_PTXAS_PATH",
    "TRITON_LIBCUDA_PATH",
    "NVIDIA_VISIBLE_DEVICES",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
)

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000


@dataclass(frozen=True)
class Limits:
    """Operating-system limits for one child (see ``config.SandboxSettings``)."""

    output_bytes: int
    cpu_seconds: int | None = None
    memory_bytes: int | None = None
    extra_processes: int | None = None
    isolate_network: bool = False


def _prctl(option: int, value: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: best effort
        pass


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def become_subreaper() -> None:
    """Orphaned descendants are re-parented to this process instead of init, so they can be
    found and killed after a job even when they left the child's process group."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def scrubbed_environment(source: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    env = {key: source[key] for key in _KEPT_VARIABLES if key in source}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.update(extra)
    return env


def enter(workdir: str, result_fd: int, *, limits: Limits, env: dict[str, str]) -> bool:
    """Called in the child right after fork, before any candidate code is loaded. Returns
    whether the child's network is isolated."""
    # first, while the child still has a single thread (a user namespace requires that)
    isolated = limits.isolate_network and _isolate_network()
    os.setsid()
    die_with_parent()
    os.umask(0o077)

    # The result pipe becomes fd 3; every other inherited descriptor is closed.
    if result_fd != RESULT_FD:
        os.dup2(result_fd, RESULT_FD)
        os.close(result_fd)
    os.set_inheritable(RESULT_FD, False)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    log = os.open(os.path.join(workdir, OUTPUT_FILE), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.closerange(RESULT_FD + 1, _max_fd())

    _apply_limits(limits)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(workdir)
    return isolated


def _apply_limits(limits: Limits) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Python ignores SIGXFSZ, so an oversized write fails with EFBIG instead of killing us.
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.output_bytes, limits.output_bytes))
    if limits.cpu_seconds is not None:  # SIGXCPU at the soft limit, SIGKILL at the hard one
        _lower(resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 5)
    if limits.memory_bytes is not None:  # allocations beyond it fail (MemoryError, not OOM kill)
        _lower(resource.RLIMIT_DATA, limits.memory_bytes, limits.memory_bytes)
    if limits.extra_processes is not None:  # counts the user's threads and processes
        total = _tasks_on_machine() + limits.extra_processes
        _lower(resource.RLIMIT_NPROC, total, total)


def _lower(which: int, soft: int, hard: int) -> None:
    """Set a limit, never above the one already in force (only root may raise a hard limit)."""
    _, current_hard = resource.getrlimit(which)
    if current_hard != resource.RLIM_INFINITY:
        hard = min(hard, current_hard)
    soft = min(soft, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(which, (soft, hard))


def _tasks_on_machine() -> int:
    """Threads on the machine (an upper bound on this user's), from /proc/loadavg."""
    try:
        with open("/proc/loadavg") as handle:
            return int(handle.read().split()[3].split("/")[1])
    except (OSError, IndexError, ValueError):
        return 4096


def _isolate_network() -> bool:
    """A new user and network namespace: the child keeps its user id but sees only a loopback
    interface that is down, so it can reach no other machine or local service."""
    uid, gid = os.getuid(), os.getgid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
            return False
        for path, text in (
            ("/proc/self/setgroups", "deny"),
            ("/proc/self/uid_map", f"{uid} {uid} 1"),
            ("/proc/self/gid_map", f"{gid} {gid} 1"),
        ):
            with open(path, "w") as handle:
                handle.write(text)
    except OSError:
        return False
    return True


def _max_fd() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 65536


def read_output_tail(workdir: str, limit: int = 4000) -> str | None:
    path = os.path.join(workdir, OUTPUT_FILE)
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            handle.seek(max(0, size - limit))
            data = handle.read()
    except OSError:
        return None
    if not data:
        return None
    text = data.decode("utf-8", errors="replace")
    return ("…" + text) if size > limit else text


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_children() -> int:
    """SIGKILL every child of this (subreaper) process and reap those already gone, without
    waiting. Returns how many children are left (exiting)."""
    reap_children()
    children = _children_of(os.getpid())
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    reap_children()
    return len(_children_of(os.getpid()))


def reap_children() -> None:
    """Collect the exit status of every child that has already ended."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _children_of(pid: int) -> list[int]:
    children: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return children
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                children.extend(int(p) for p in handle.read().split())
        except OSError:
            continue
    return children
