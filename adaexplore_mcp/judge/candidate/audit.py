"""An audit hook in the candidate's process: refuses, and records, what the candidate's own code
does to reach outside its computation.

A first signal, with a clear name for the agent: the operating system already refuses the same
actions (a read-only filesystem, no network, no processes on the CPU), and the verdict does not
depend on anything in this process.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Callable
from types import FrameType, FunctionType
from typing import NamedTuple

from adaexplore_mcp.judge.candidate.provenance import (
    RENAMING,
    compiles_under_a_packages_name,
    unmarshals_under_a_packages_name,
)
from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

_getframe = sys._getframe  # bound now: ``sys`` is a module a kernel may change

_STDLIB = tuple(
    {os.path.realpath(p) + os.sep for p in (sysconfig.get_paths()["stdlib"],)}
    | {os.path.realpath(os.path.dirname(os.__file__)) + os.sep}
)

_WATCHED_EVENTS = frozenset(
    {
        "open",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "os.kill",
        "os.killpg",
        "subprocess.Popen",
        "pty.spawn",
        "socket.connect",
        "socket.bind",
        "socket.sendto",
        "socket.sendmsg",
        "socket.getaddrinfo",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "sys._getframe",
        "sys._current_frames",
        "object.__getattr__",
        "sys.settrace",
        "sys.setprofile",
        "code.__new__",
        "function.__new__",
        "object.__setattr__",
        "compile",
        "marshal.loads",
        "ctypes.dlopen",
        "ctypes.cdata",
        "ctypes.addressof",
        "ctypes.string_at",
        *(
            _PATH_EVENTS := (
                "os.mkdir",
                "os.rmdir",
                "os.remove",
                "os.rename",
                "os.symlink",
                "os.link",
                "os.truncate",
                "os.chmod",
                "os.chown",
                "sqlite3.connect",
            )
        ),
    }
)
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
# where the judge keeps what a kernel must not call (candidate/switches.py)
_DEFAULTS_ATTRIBUTES = frozenset({"__defaults__", "__kwdefaults__"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class Writable(NamedTuple):
    """Where a kernel's own code may write: its working directory and its ``TMPDIR``, but for
    the compilers' caches kept there (a file planted in Triton's would be loaded as a kernel's
    compiled code)."""

    places: tuple[str, ...]
    closed: tuple[str, ...]


def writable_of(workdir: str, tmpdir: str | None) -> Writable:
    if not tmpdir:
        return Writable((workdir,), ())
    tmp = os.path.realpath(tmpdir) + os.sep
    return Writable((workdir, tmp), tuple(tmp + cache + os.sep for cache in ("triton", "inductor")))


def allows(writable: Writable, real: str) -> bool:
    here = real + os.sep
    if real == os.devnull:
        return True
    return any(map(here.startswith, writable.places)) and not any(
        map(here.startswith, writable.closed)
    )


def audit_hook(
    kernel_path: str,
    workdir: str,
    events: list[tuple[str, str]],
    installed: tuple[str, ...],
    *,
    tmpdir: str | None = None,
) -> Callable[[str, tuple], None]:
    """The hook (``_audit_hook``), made in a namespace of its own: this module's functions
    rebuilt on a private copy of its globals and builtins, which no code reaches but the hook's,
    itself held only by the interpreter. In the module's own globals, reached through any of
    its functions' ``__globals__``, a kernel rebound the set of events the hook looks at and
    the hook refused nothing after."""
    private = dict(vars(sys.modules[__name__]))
    private["__builtins__"] = own_builtins()
    for name, value in list(private.items()):
        if isinstance(value, FunctionType) and value.__module__ == __name__:
            rebuilt = FunctionType(
                value.__code__, private, value.__name__, value.__defaults__, value.__closure__
            )
            rebuilt.__kwdefaults__ = value.__kwdefaults__
            private[name] = rebuilt
    return private["_audit_hook"](kernel_path, workdir, events, installed, tmpdir=tmpdir)


def _audit_hook(
    kernel_path: str,
    workdir: str,
    events: list[tuple[str, str]],
    installed: tuple[str, ...],
    *,
    tmpdir: str | None = None,
) -> Callable[[str, tuple], None]:
    """The hook refuses what the candidate's own code does: the innermost frame outside the
    standard library is code of no installed package (the kernel file, a module it wrote into
    its working directory, code it compiled). The same action taken by torch or Triton on its
    behalf (Triton runs ptxas, writes its cache) is theirs and allowed; code may not pass for
    theirs by its file name (``code.__new__``, ``compile``, ``marshal.loads``: ``provenance``).
    ``installed``: where installed packages' code lies (``installed_code``). ``tmpdir``: the
    process's own ``TMPDIR`` (``sandbox``), writable as the working directory is, but for the
    compilers' caches in it: Python's ``tempfile`` writes there first, and an honest kernel
    that made a temporary file was refused for it."""
    busy = [False]
    own_pid = str(os.getpid())
    writable = writable_of(workdir, tmpdir)

    def candidate_frame(direct: bool) -> bool:
        # past this function, _judge and hook: the event's own frame
        return candidate_calls(_getframe(3), kernel_path, installed, direct=direct)

    def hook(event: str, args: tuple) -> None:
        if event not in _WATCHED_EVENTS or busy[0]:
            return
        busy[0] = True
        try:
            verdict = _judge(event, args)
        finally:
            busy[0] = False
        if verdict is not None:
            events.append(verdict)
            raise PermissionError(f"refused by the judge: {verdict[1]}")

    def _judge(event: str, args: tuple) -> tuple[str, str] | None:
        if event == "marshal.loads":  # every import from cached bytecode: the frame first
            if candidate_frame(False) and unmarshals_under_a_packages_name(args, installed):
                return "harness_tampering", f"{event} is not allowed: {RENAMING}"
            return None
        rule = _rule(event, args, writable, own_pid, installed)
        if rule is None:
            return None
        check, detail, direct = rule
        return (check, detail) if candidate_frame(direct) else None

    return hook


def candidate_calls(
    frame: FrameType | None,
    kernel_path: str,
    installed: tuple[str, ...],
    *,
    direct: bool = False,
) -> bool:
    """Whether the candidate's code is what runs at ``frame``: the innermost frame outside the
    standard library is code of no installed package. ``direct``: ``frame`` itself (or
    ``inspect`` on its behalf)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _standard_library(filename):
            return _candidates(filename, kernel_path, installed)
        if direct and not filename.endswith("inspect.py"):
            return False
        frame = frame.f_back
    return False


def candidate_on_stack(
    frame: FrameType | None, kernel_path: str, installed: tuple[str, ...]
) -> bool:
    """Whether any frame from ``frame`` outwards runs the candidate's code (code of no installed
    package, outside the standard library)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _standard_library(filename) and _candidates(filename, kernel_path, installed):
            return True
        frame = frame.f_back
    return False


def _standard_library(filename: str) -> bool:
    return filename.startswith(_STDLIB) or filename.startswith("<frozen")


def _candidates(filename: str, kernel_path: str, installed: tuple[str, ...]) -> bool:
    """Code of the candidate's: the kernel file, or code of no installed package."""
    real = os.path.realpath(filename)
    return real == kernel_path or not real.startswith(installed)


def installed_code(workdir: str) -> tuple[str, ...]:
    """Where the code of installed packages lies (torch's, Triton's, this one's): the import
    path's directories outside the working directory, which the sandbox mounts read-only."""
    import adaexplore_mcp

    found = {os.path.realpath(os.path.dirname(adaexplore_mcp.__file__)) + os.sep}
    for entry in sys.path:
        real = os.path.realpath(entry or os.curdir) + os.sep
        if os.path.isdir(real) and not real.startswith(workdir) and not workdir.startswith(real):
            found.add(real)
    return tuple(found)


def _rule(
    event: str, args: tuple, writable: Writable, own_pid: str, installed: tuple[str, ...] = ()
) -> tuple[str, str, bool] | None:
    """(check, reason, direct) when ``event`` is refused if the kernel's code caused it;
    ``direct``: only when the kernel's own frame (or ``inspect`` on its behalf) raised it,
    because the standard library asks for frames on its own (namedtuple, dataclasses)."""
    if (
        event in ("code.__new__", "function.__new__")
        or (event == "object.__setattr__" and len(args) > 1 and args[1] == "__code__")
        or (event == "compile" and compiles_under_a_packages_name(args, installed))
    ):
        return "harness_tampering", f"{event} is not allowed: {RENAMING}", False
    if event == "open":
        return _open_rule(args, writable, own_pid)
    if event in _PATH_EVENTS:
        return _path_rule(event, args, writable)
    if event.startswith(("os.", "subprocess.", "pty.")):
        return (
            "process_spawn",
            f"{event} is not allowed: a kernel may not start or signal processes",
            False,
        )
    if event.startswith("socket."):
        return "network", f"{event} is not allowed: a kernel has no network access", False
    if event.startswith("ctypes."):
        return (
            "harness_tampering",
            f"{event} is not allowed: raw memory access can read or patch the judge",
            False,
        )
    if event.startswith("gc.") or event == "sys._current_frames":
        return (
            "harness_tampering",
            f"{event}() is not allowed: it reaches the judge's objects",
            False,
        )
    if event in ("sys.settrace", "sys.setprofile"):
        return "harness_tampering", f"{event}() is not allowed: it observes the judge", False
    if event == "sys._getframe" or (
        event == "object.__getattr__" and len(args) > 1 and args[1] in _FRAME_ATTRIBUTES
    ):
        return (
            "harness_tampering",
            "frame access is not allowed: it reaches the judge's variables",
            True,
        )
    if event == "object.__getattr__" and len(args) > 1 and args[1] in _DEFAULTS_ATTRIBUTES:
        return (
            "harness_tampering",
            f"reading a function's {args[1]} is not allowed: it reaches the judge's originals",
            True,
        )
    return None


def _path_rule(event: str, args: tuple, writable: Writable) -> tuple[str, str, bool] | None:
    """A change to the filesystem (or a database opened) outside the working directory."""
    paths = args[:2] if event in ("os.rename", "os.symlink", "os.link") else args[:1]
    for path in paths:
        if not isinstance(path, str | bytes):
            continue
        real = os.path.realpath(os.fsdecode(path))
        if event == "os.symlink" and path is args[0]:
            continue  # a link's target may point anywhere: what matters is where it is made
        if not allows(writable, real):
            return (
                "file_write",
                f"{event} on {os.fsdecode(path)} is not allowed; a kernel may only change files "
                "inside its working directory",
                False,
            )
    return None


def _open_rule(args: tuple, writable: Writable, own_pid: str) -> tuple[str, str, bool] | None:
    path, mode, flags = (*args, None, None, None)[:3]
    if not isinstance(path, str | bytes):
        return None  # a file descriptor
    path = os.fsdecode(path)
    real = os.path.realpath(path)
    if real.startswith("/proc/"):
        parts = real.split("/")
        if parts[2] not in ("self", "thread-self", own_pid):
            return (
                "harness_tampering",
                f"reading {path} is not allowed: another process's "
                "state is where the judge keeps its environment",
                False,
            )
        if real.endswith("/mem"):
            return "harness_tampering", "reading process memory is not allowed", False
        return None
    writes = bool(set(mode or "") & set("wax+")) or bool((flags or 0) & _WRITE_FLAGS)
    if writes and not allows(writable, real):
        return (
            "file_write",
            f"writing {path} is not allowed; a kernel may only write inside its working directory",
            False,
        )
    return None
