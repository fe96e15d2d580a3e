"""A seccomp filter for the processes that run user code.

Refused (``EPERM``): debugging or reading other processes (``ptrace``, ``process_vm_*``,
``kcmp``, ``pidfd_getfd``), anything that changes the filesystem view or namespaces
(``mount`` and the new mount API, ``pivot_root``, ``chroot``, ``unshare``, ``setns``), kernel
facilities a kernel has no use for (``bpf``, ``perf_event_open``, ``userfaultfd``, keyrings,
module loading, ``kexec``, ``reboot``, swap, ``acct``, ``quotactl``, ``io_uring``, file
handles), sockets of a family no network namespace holds (``AF_VSOCK`` and the like), and
signals to any process but itself. When processes are not allowed, ``fork``,
``vfork``, ``execve``, ``execveat`` and a ``clone`` without ``CLONE_THREAD`` are refused too
(``clone3`` answers ``ENOSYS``, so the C library falls back to ``clone``, whose flags a filter
can read). A system call of another architecture's table (x32) is refused as well.

A second filter (``install_sealed``) goes on once the process has made its CUDA context, which
it does holding the GPU lock with ``flock``, and before any user code loads. It closes the
channels through which evaluations running at once could signal each other on the files every
sandbox sees read-only (torch's package, say): file locks (``flock``, and ``fcntl``'s record
and open-file-description locks) succeed without locking anything, so a lock taken in one
process is never seen from another, and a lock test reads back what it asked; file watches
(``inotify``, ``fanotify``, ``fcntl``'s ``F_NOTIFY``) and leases are refused. A lock that does
nothing costs a process only what it shares with no one: its caches are its own.

The filters are written in classic BPF by hand: the rules are few and fixed, and no library is
needed for them.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from dataclasses import dataclass

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2

_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000

_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_JGE_K = 0x35
_BPF_JSET_K = 0x45
_BPF_RET_K = 0x06

_CLONE_THREAD = 0x00010000
_X32_SYSCALL_BIT = 0x40000000

_OFFSET_NR = 0
_OFFSET_ARCH = 4
_OFFSET_ARG0_LOW = 16  # seccomp_data.args[0], low 32 bits (little-endian)
_OFFSET_ARG1_LOW = 24

# fcntl commands: record and open-file-description locks (made no-ops), leases and directory
# notification (refused)
_F_LOCKS = (5, 6, 7, 36, 37, 38)  # F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, _SETLK, _SETLKW
_F_REFUSED = (1024, 1026)  # F_SETLEASE, F_NOTIFY
# AF_UNIX, AF_INET, AF_INET6, AF_NETLINK
_SOCKET_FAMILIES = (1, 2, 10, 16)


@dataclass(frozen=True)
class _Table:
    audit_arch: int
    denied: dict[str, int]
    spawning: dict[str, int]  # refused when processes are not allowed
    clone: int
    clone3: int
    signals: dict[str, int]  # allowed only at the process itself (first argument)
    signals_denied: dict[str, int]
    x32: bool
    flock: int
    fcntl: int
    watches: dict[str, int]  # refused once sealed
    sockets: tuple[int, int]  # socket, socketpair


_X86_64 = _Table(
    audit_arch=0xC000003E,
    denied={
        "ptrace": 101,
        "process_vm_readv": 310,
        "process_vm_writev": 311,
        "kcmp": 312,
        "pidfd_getfd": 438,
        "mount": 165,
        "umount2": 166,
        "pivot_root": 155,
        "chroot": 161,
        "unshare": 272,
        "setns": 308,
        "mount_setattr": 442,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "bpf": 321,
        "perf_event_open": 298,
        "userfaultfd": 323,
        "keyctl": 250,
        "add_key": 248,
        "request_key": 249,
        "kexec_load": 246,
        "kexec_file_load": 320,
        "init_module": 175,
        "finit_module": 313,
        "delete_module": 176,
        "reboot": 169,
        "swapon": 167,
        "swapoff": 168,
        "acct": 163,
        "quotactl": 179,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "name_to_handle_at": 303,
        "open_by_handle_at": 304,
        # the judge stops a job's process group while it calibrates (``trusted.timing``)
        "setsid": 112,
        "setpgid": 109,
    },
    spawning={"fork": 57, "vfork": 58, "execve": 59, "execveat": 322},
    clone=56,
    clone3=435,
    signals={"kill": 62, "tgkill": 234},
    signals_denied={
        "tkill": 200,
        "pidfd_send_signal": 424,
        "pidfd_open": 434,
        "rt_sigqueueinfo": 129,
        "rt_tgsigqueueinfo": 297,
    },
    x32=True,
    flock=73,
    fcntl=72,
    watches={"inotify_init": 253, "inotify_init1": 294, "fanotify_init": 300},
    sockets=(41, 53),
)

_AARCH64 = _Table(
    audit_arch=0xC00000B7,
    denied={
        "ptrace": 117,
        "process_vm_readv": 270,
        "process_vm_writev": 271,
        "kcmp": 272,
        "pidfd_getfd": 438,
        "mount": 40,
        "umount2": 39,
        "pivot_root": 41,
        "chroot": 51,
        "unshare": 97,
        "setns": 268,
        "mount_setattr": 442,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "bpf": 280,
        "perf_event_open": 241,
        "userfaultfd": 282,
        "keyctl": 219,
        "add_key": 217,
        "request_key": 218,
        "kexec_load": 104,
        "kexec_file_load": 294,
        "init_module": 105,
        "finit_module": 273,
        "delete_module": 106,
        "reboot": 142,
        "swapon": 224,
        "swapoff": 225,
        "acct": 89,
        "quotactl": 60,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "name_to_handle_at": 264,
        "open_by_handle_at": 265,
        "setsid": 157,
        "setpgid": 154,
    },
    spawning={"execve": 221, "execveat": 281},
    clone=220,
    clone3=435,
    signals={"kill": 129, "tgkill": 131},
    signals_denied={
        "tkill": 130,
        "pidfd_send_signal": 424,
        "pidfd_open": 434,
        "rt_sigqueueinfo": 138,
        "rt_tgsigqueueinfo": 240,
    },
    x32=False,
    flock=32,
    fcntl=25,
    watches={"inotify_init1": 26, "fanotify_init": 262},
    sockets=(198, 199),
)

_TABLES = {"x86_64": _X86_64, "aarch64": _AARCH64}


def supported() -> bool:
    return platform.machine() in _TABLES


def _instruction(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _native_call(table: _Table) -> list[bytes]:
    """Kill a process making a system call of another architecture (the same number names
    another call there), then load the call's number."""
    return [
        _instruction(_BPF_LD_W_ABS, _OFFSET_ARCH),
        _instruction(_BPF_JEQ_K, table.audit_arch, jt=1),
        _instruction(_BPF_RET_K, _RET_KILL_PROCESS),
        _instruction(_BPF_LD_W_ABS, _OFFSET_NR),
    ]


def _answer(number: int, verdict: int) -> list[bytes]:
    """The loaded value ``number``: return ``verdict``; else on to the next rule."""
    return [_instruction(_BPF_JEQ_K, number, jf=1), _instruction(_BPF_RET_K, verdict)]


def program(*, allow_processes: bool, own_pid: int, machine: str | None = None) -> bytes:
    """The filter, as the bytes of a ``struct sock_filter`` array."""
    table = _TABLES[machine or platform.machine()]
    deny = _RET_ERRNO | errno.EPERM
    ld, jeq, ret = _BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_RET_K
    code = _native_call(table)
    if table.x32:
        code += [_instruction(_BPF_JGE_K, _X32_SYSCALL_BIT, jf=1), _instruction(ret, deny)]
    refused = dict(table.denied) | table.signals_denied
    if not allow_processes:
        refused |= table.spawning
    for number in sorted(set(refused.values())):
        code += _answer(number, deny)
    # clone3's flags live in memory a filter cannot read: ENOSYS makes the C library use clone
    code += _answer(table.clone3, _RET_ERRNO | errno.ENOSYS)
    if not allow_processes:  # a clone must make a thread of this process
        code += [
            _instruction(jeq, table.clone, jf=4),
            _instruction(ld, _OFFSET_ARG0_LOW),
            _instruction(_BPF_JSET_K, _CLONE_THREAD, jf=1),
            _instruction(ret, _RET_ALLOW),
            _instruction(ret, deny),
        ]
    # a socket only of a family the network namespace holds, or a local one: a virtual
    # machine's (AF_VSOCK) and the like reach past it
    socket, socketpair = table.sockets
    families = _SOCKET_FAMILIES
    code += [
        _instruction(jeq, socket, jt=1),
        _instruction(jeq, socketpair, jf=len(families) + 3),
        _instruction(ld, _OFFSET_ARG0_LOW),
    ]
    for index, family in enumerate(families):
        code.append(_instruction(jeq, family, jt=len(families) - index))
    code += [_instruction(ret, deny), _instruction(ret, _RET_ALLOW)]
    # kill and tgkill only at this process itself
    code += [
        _instruction(jeq, table.signals["kill"], jt=1),
        _instruction(jeq, table.signals["tgkill"], jf=3),
        _instruction(ld, _OFFSET_ARG0_LOW),
        _instruction(jeq, own_pid, jt=1),
        _instruction(ret, deny),
        _instruction(ret, _RET_ALLOW),
    ]
    return b"".join(code)


def sealed_program(machine: str | None = None) -> bytes:
    """The second filter (``install_sealed``), as the bytes of a ``struct sock_filter`` array."""
    table = _TABLES[machine or platform.machine()]
    deny, no_op = _RET_ERRNO | errno.EPERM, _RET_ERRNO  # errno 0: skipped, and 0 returned
    code = _native_call(table) + _answer(table.flock, no_op)
    for number in sorted(table.watches.values()):
        code += _answer(number, deny)
    commands = [(command, no_op) for command in _F_LOCKS] + [(c, deny) for c in _F_REFUSED]
    code += [
        _instruction(_BPF_JEQ_K, table.fcntl, jf=2 * len(commands) + 1),
        _instruction(_BPF_LD_W_ABS, _OFFSET_ARG1_LOW),
    ]
    for command, verdict in commands:
        code += _answer(command, verdict)
    code.append(_instruction(_BPF_RET_K, _RET_ALLOW))
    return b"".join(code)


def install(*, allow_processes: bool) -> None:
    """Install the filter in this process (and every thread and process it starts later).
    Sets ``no_new_privs``, which unprivileged filters require. Raises ``OSError`` if the kernel
    refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    _load(program(allow_processes=allow_processes, own_pid=os.getpid()))


def install_sealed() -> None:
    """Install the second filter, on top of the first (``install``, which set
    ``no_new_privs``). Raises ``OSError`` if the kernel refuses."""
    _load(sealed_program())


def _load(filters: bytes) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    count = len(filters) // 8
    buffer = ctypes.create_string_buffer(filters, len(filters))

    class _Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = _Program(count, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
