"""Linux namespaces and capabilities, through the C library (Python 3.11 has no ``os.unshare``)."""

from __future__ import annotations

import ctypes
import os
import platform

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

INSIDE_ID = 1000  # who the process is inside its user namespace: not root, so exec grants nothing

_PR_CAPBSET_DROP = 24
_CAP_LAST = 63
_CAPSET = {"x86_64": 126, "aarch64": 91}
_CAP_VERSION_3 = 0x20080522


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def unshare(flags: int) -> int:
    """0 on success, else the errno."""
    libc = _libc()
    if libc.unshare(ctypes.c_int(flags)) != 0:
        return ctypes.get_errno()
    return 0


def map_ids(uid: int, gid: int) -> None:
    """Map this process's user and group to ``INSIDE_ID`` in its new user namespace."""
    for path, text in (
        ("/proc/self/setgroups", "deny"),
        ("/proc/self/uid_map", f"{INSIDE_ID} {uid} 1"),
        ("/proc/self/gid_map", f"{INSIDE_ID} {gid} 1"),
    ):
        with open(path, "w") as handle:
            handle.write(text)


def enter(*, network: bool, pids: bool) -> tuple[int, list[str]]:
    """Unshare what this process may: a user namespace (unless the kernel refuses it), mounts,
    System V IPC, and optionally the network and process ids. Returns the flags that took and
    notes on what did not."""
    notes: list[str] = []
    wanted = CLONE_NEWNS | CLONE_NEWIPC
    if network:
        wanted |= CLONE_NEWNET
    if pids:
        wanted |= CLONE_NEWPID
    uid, gid = os.getuid(), os.getgid()
    failed = unshare(CLONE_NEWUSER | wanted)
    if not failed:
        map_ids(uid, gid)
        return CLONE_NEWUSER | wanted, notes
    notes.append(f"no user namespace ({os.strerror(failed)})")
    if os.geteuid() == 0:  # root may make the others without one
        failed = unshare(wanted)
        if not failed:
            return wanted, notes
        notes.append(f"no namespaces at all ({os.strerror(failed)})")
    return 0, notes


def drop_capabilities() -> None:
    """Give up every capability (those a new user namespace grants its first process): after
    the sandbox is set up, nothing in it may change mounts or namespaces again."""
    libc = _libc()
    for cap in range(_CAP_LAST + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # unknown capabilities fail harmlessly
    number = _CAPSET.get(platform.machine())
    if number is None:
        return
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    libc.syscall(ctypes.c_long(number), ctypes.byref(header), ctypes.byref(data))


def set_dumpable(enabled: bool) -> None:
    """A process that is not dumpable cannot be traced, and its ``/proc`` files (memory,
    environment, descriptors) cannot be read, by other processes of the same user."""
    _libc().prctl(4, 1 if enabled else 0, 0, 0, 0)  # PR_SET_DUMPABLE
