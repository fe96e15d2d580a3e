"""Process limits, descriptors, the environment, and cleaning up after a job."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import resource
import signal
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

# Diagnostics the worker passes on to every process of a job (``worker.processes``).
DEBUG_VARIABLES = (
    "ADAEXPLORE_DEBUG_STACKS_S",
    "ADAEXPLORE_DEBUG_PROFILE",
    "ADAEXPLORE_DEBUG_SPANS",
)

# Variables user code may see; everything else (API keys, tokens, the user's paths) is dropped.
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
    *DEBUG_VARIABLES,
)

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class Limits:
    """Operating-system limits for one process (see ``config.SandboxSettings``)."""

    file_bytes: int
    cpu_seconds: int | None = None
    memory_bytes: int | None = None
    extra_processes: int | None = None


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
    found and killed after a job even when they left their process group."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def package_pythonpath() -> str:
    """PYTHONPATH for a process the judge starts: this package's own location first, then the
    caller's PYTHONPATH. With ``python -P`` it is the only way the package is found."""
    import adaexplore_mcp

    package_parent = os.path.dirname(os.path.dirname(os.path.realpath(adaexplore_mcp.__file__)))
    return os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH")) if p)


def scrubbed_environment(source: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    env = {key: source[key] for key in _KEPT_VARIABLES if key in source}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.update(extra)
    return env


def gpu_environment(device: str, cuda_connections: int | None) -> dict[str, str]:
    """What the driver reads when a user-code process makes its CUDA context
    (``SandboxSettings.cuda_connections``); nothing on the CPU."""
    if device == "cpu" or cuda_connections is None:
        return {}
    return {"CUDA_DEVICE_MAX_CONNECTIONS": str(cuda_connections)}


def redirect(*, stdout_fd: int, keep: dict[int, int]) -> None:
    """stdin from /dev/null, stdout and stderr into ``stdout_fd`` (a pipe the worker drains),
    each descriptor in ``keep`` moved to its number (``{target: source}``, targets from 3 up);
    every other inherited descriptor is closed."""
    floor = max(keep, default=2) + 1
    # copies above every target first, since a source may sit where another target goes
    parked = {target: fcntl.fcntl(source, fcntl.F_DUPFD, floor) for target, source in keep.items()}
    output = fcntl.fcntl(stdout_fd, fcntl.F_DUPFD, floor)
    for target, copy in parked.items():
        os.dup2(copy, target, inheritable=False)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.closerange(floor, _max_fd())


def apply(limits: Limits) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Python ignores SIGXFSZ, so an oversized write fails with EFBIG instead of killing us.
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
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


def _max_fd() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 65536


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


@contextlib.contextmanager
def groups_stopped(pgids: Iterable[int]) -> Iterator[None]:
    """Every process of the groups ``pgids`` stopped by the kernel (SIGSTOP, which a process
    can neither catch nor ignore) inside the block, and continued after it, whatever
    happened. A user-code process cannot leave its group (``sandbox.seccomp``), and a stopped
    one launches nothing. Raises ``ProcessLookupError`` for a group that is gone (its leader
    lives as long as the job's processes do, ``sandbox.enter``): nothing was stopped, and the
    caller must not go on as if it had been."""
    stopped = []
    try:
        for pgid in pgids:
            if pgid <= 1 or pgid == os.getpgrp():  # 0 and 1 name no job's group
                raise ValueError(f"{pgid} is not a user-code process group")
            if os.getpgid(pgid) != pgid:
                raise ValueError(f"process {pgid} does not lead a process group")
            os.killpg(pgid, signal.SIGSTOP)
            stopped.append(pgid)
        yield
    finally:
        for pgid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGCONT)


def kill_children(keep: set[int] | frozenset[int] = frozenset()) -> int:
    """SIGKILL every child of this (subreaper) process but ``keep`` and reap those already
    gone, without waiting. Returns how many children are left (exiting)."""
    reap_children(keep)
    children = [pid for pid in _children_of(os.getpid()) if pid not in keep]
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    reap_children(keep)
    return len([pid for pid in _children_of(os.getpid()) if pid not in keep])


def children_but(keep: set[int] | frozenset[int]) -> list[int]:
    """This process's children, but ``keep``."""
    return [pid for pid in _children_of(os.getpid()) if pid not in keep]


def reap_children(keep: set[int] | frozenset[int] = frozenset()) -> None:
    """Collect the exit status of every child that has already ended, but ``keep``'s (whose
    parent asks after them itself)."""
    for pid in _children_of(os.getpid()):
        if pid not in keep:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
    if not keep:  # zombies no longer listed as children are reaped here
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
