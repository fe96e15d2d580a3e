"""A private view of the filesystem, built in a new mount namespace.

Directories that hold other people's or the judge's data (the home directory, the judge's own
data directory with its database, ``/tmp``, ``/run``, ``/dev/shm``, ...) are covered by empty
read-only filesystems, except for the paths Python itself needs (its prefix and ``sys.path``),
which are mounted back read-only; a directory to hide inside one of those (the judge's home in
a checkout on ``sys.path``) is covered again. Then every mount becomes read-only, and a
size-limited ``/tmp`` (compiler caches, temporary files), a working directory (the candidate's
own files) and a fresh ``/dev/shm`` are mounted writable. Nothing here affects any other
process.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
import sys
from dataclasses import dataclass, field

_MS_RDONLY = 0x1
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_REMOUNT = 0x20
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000
_MNT_DETACH = 0x2
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_MOUNT_SETATTR = 442  # the same number on x86_64 and aarch64
_O_PATH = 0o10000000

# The view's /dev holds only these of the host's (the GPU's when there is one): where the judge
# runs as root the sandbox's user is root's mapping, the owner of every device node, and with the
# host's /dev a kernel bound a loop device to a file of its own (an ioctl on a node opened for
# reading) whose contents the next evaluation's kernel read back
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
GPU_DEVICE_PREFIX = "nvidia"  # nvidiactl, nvidia0..., nvidia-uvm, nvidia-caps/
_DEV_LINKS = (
    ("/proc/self/fd", "/dev/fd"),
    ("/proc/self/fd/0", "/dev/stdin"),
    ("/proc/self/fd/1", "/dev/stdout"),
    ("/proc/self/fd/2", "/dev/stderr"),
)

HIDDEN_ALWAYS = ("/tmp", "/var/tmp", "/run", "/dev/shm", "/home", "/root", "/mnt", "/media")
# never covered, whatever a setting says: the system itself lives there
_SYSTEM = frozenset(
    {
        "/",
        "/usr",
        "/lib",
        "/lib64",
        "/lib32",
        "/bin",
        "/sbin",
        "/etc",
        "/opt",
        "/dev",
        "/proc",
        "/sys",
        "/var",
        "/boot",
    }
)


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


@dataclass(frozen=True)
class ViewPlan:
    """What the view hides, keeps and makes writable."""

    hide: tuple[str, ...]
    keep: tuple[str, ...]
    tmp_bytes: int
    workdir: str
    workdir_bytes: int
    shm_bytes: int = 64 * 2**20
    writable_binds: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    # hidden directories inside a kept one (a judge's home in a checkout on sys.path, under
    # /tmp): covered again once the kept ones are mounted back
    cover: tuple[str, ...] = ()
    # the device nodes of the host's /dev the view's own /dev holds (``devices_to_keep``)
    devices: tuple[str, ...] = ()


def plan_for(
    *,
    private_dirs: list[str],
    workdir: str,
    workdir_bytes: int,
    tmp_bytes: int,
    extra_keep: list[str] | None = None,
    writable_binds: list[tuple[str, str]] | None = None,
    package_dir: str | None = None,
) -> ViewPlan:
    """The plan for this Python: hide the usual places and ``private_dirs``, keep what the
    interpreter and its packages need (``package_dir``: this package's own directory)."""
    candidates = {os.path.realpath(p) for p in (*HIDDEN_ALWAYS, *private_dirs) if p}
    hide = _outermost(
        [p for p in candidates if p not in _SYSTEM and os.path.isdir(p)], strict=False
    )
    needed = [sys.prefix, sys.base_prefix, sys.exec_prefix]
    needed.append(os.path.dirname(os.path.realpath(sys.executable)))
    needed += _python_path(package_dir or _package_dir())
    needed += [p for p in (extra_keep or []) if p and os.path.isdir(p)]
    keep = _outermost(
        [
            real
            for real in {os.path.realpath(p) for p in needed}
            if any(_within(real, root) and real != root for root in hide)
        ],
        strict=True,
    )
    cover = _outermost(
        [
            path
            for path in candidates
            if any(_within(path, kept) and path != kept for kept in keep)
            and not any(_within(os.path.realpath(n), path) for n in needed)
            and os.path.isdir(path)
        ],
        strict=False,
    )
    return ViewPlan(
        hide=tuple(hide),
        keep=tuple(keep),
        cover=tuple(cover),
        tmp_bytes=tmp_bytes,
        workdir=workdir,
        workdir_bytes=workdir_bytes,
        writable_binds=tuple(writable_binds or ()),
        devices=devices_to_keep(),
    )


def devices_to_keep(dev: str = "/dev") -> tuple[str, ...]:
    """The host's device nodes the view's /dev holds: the null, zero, full and random devices
    and the GPU's (``nvidia*``, directories included)."""
    found = [path for path in DEVICES if os.path.exists(path)]
    try:
        names = sorted(os.listdir(dev))
    except OSError:
        names = []
    gpu = [os.path.join(dev, name) for name in names if name.startswith(GPU_DEVICE_PREFIX)]
    return tuple(found + [path for path in gpu if os.path.exists(path)])  # no dangling link


def _package_dir() -> str:
    import adaexplore_mcp

    return os.path.dirname(os.path.realpath(adaexplore_mcp.__file__))


def _python_path(package_dir: str) -> list[str]:
    """The ``sys.path`` entries, but for a checkout of this package (its parent on the path, and
    not a directory where packages are installed): there only the package itself is needed, not
    what lies beside it (a ``.env``, the git history, the developer's notes)."""
    package = os.path.realpath(package_dir)
    checkout = os.path.dirname(package)
    installed = {os.path.realpath(p) for p in _site_directories()}
    paths = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        paths.append(package if real == checkout and real not in installed else real)
    return paths


def _site_directories() -> list[str]:
    import site
    import sysconfig

    found = [*getattr(site, "getsitepackages", list)(), site.getusersitepackages()]
    found += [sysconfig.get_paths()[key] for key in ("purelib", "platlib")]
    return found


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _outermost(paths: list[str], *, strict: bool) -> list[str]:
    """The paths none of the others contains (``strict``: a path equal to another is dropped)."""
    real = sorted({os.path.realpath(p) if strict else p for p in paths})
    kept: list[str] = []
    for path in real:
        if not any(_within(path, outer) for outer in kept):
            kept.append(path)
    return kept


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    libc = _libc()
    result = libc.mount(
        source.encode() if source else None,
        target.encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {target}: {os.strerror(error)}")


def _set_readonly(path: str, *, recursive: bool, readonly: bool) -> bool:
    """mount_setattr(2); False when the kernel does not have it."""
    attr = _MountAttr()
    if readonly:
        attr.attr_set = _MOUNT_ATTR_RDONLY
    else:
        attr.attr_clr = _MOUNT_ATTR_RDONLY
    libc = _libc()
    result = libc.syscall(
        ctypes.c_long(_MOUNT_SETATTR),
        ctypes.c_int(_AT_FDCWD),
        path.encode(),
        ctypes.c_uint(_AT_RECURSIVE if recursive else 0),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    if result == 0:
        return True
    if ctypes.get_errno() in (38, 22):  # ENOSYS, EINVAL: an old kernel
        return False
    error = ctypes.get_errno()
    raise OSError(error, f"mount_setattr {path}: {os.strerror(error)}")


def _every_mount_readonly() -> None:
    """For kernels without mount_setattr: remount each mount read-only, keeping its flags."""
    with open("/proc/self/mountinfo") as handle:
        points = [line.split()[4] for line in handle]
    for point in points:
        try:
            flags = os.statvfs(point).f_flag
        except OSError:
            continue
        kept = flags & (_MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        try:
            _mount(None, point, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | kept)
        except OSError:
            continue  # a mount we may not change stays as it is (it is still hidden or private)


def _bind_from(fd: int, target: str, *, writable: bool = False) -> None:
    os.makedirs(target, exist_ok=True)
    _mount(f"/proc/self/fd/{fd}", target, None, _MS_BIND | _MS_REC)
    if writable:
        _mount(None, target, None, _MS_REMOUNT | _MS_BIND)


def build(plan: ViewPlan) -> None:
    """Build the view in this process's (new, private) mount namespace."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    opened: list[int] = []  # closed whatever fails, before any user code runs in this process

    def path_fd(path: str) -> int:
        opened.append(os.open(path, _O_PATH))
        return opened[-1]

    try:
        keep_fds = {path: path_fd(path) for path in plan.keep}
        bind_fds = {target: path_fd(source) for source, target in plan.writable_binds}
        device_fds = {}
        for path in plan.devices:
            with contextlib.suppress(OSError):  # gone since it was listed: one device fewer
                device_fds[path] = path_fd(path)
        if plan.devices:
            _own_dev(device_fds)
        for root in plan.hide:
            size = plan.tmp_bytes if root == "/tmp" else 2**20
            _mount("adaexplore", root, "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={size},mode=755")
        for path, fd in keep_fds.items():
            _bind_from(fd, path)
        for path in plan.cover:
            _mount("adaexplore", path, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=4096,mode=755")
        os.makedirs(plan.workdir, exist_ok=True)
        for target in bind_fds:
            os.makedirs(target, exist_ok=True)
        if not _set_readonly("/", recursive=True, readonly=True):
            _every_mount_readonly()
        if "/tmp" in plan.hide and not _set_readonly("/tmp", recursive=False, readonly=False):
            _mount(None, "/tmp", None, _MS_REMOUNT | _MS_BIND | _MS_NOSUID | _MS_NODEV)
        _mount(
            "adaexplore",
            plan.workdir,
            "tmpfs",
            _MS_NOSUID | _MS_NODEV,
            f"size={plan.workdir_bytes},mode=755",
        )
        if os.path.isdir("/dev/shm"):
            _mount(
                "adaexplore", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={plan.shm_bytes}"
            )
        for target, fd in bind_fds.items():
            _bind_from(fd, target, writable=True)
    finally:
        for fd in opened:
            os.close(fd)


def _own_dev(device_fds: dict[str, int]) -> None:
    """A /dev of the view's own: a small tmpfs with the kept device nodes bound into it (a
    node made on a tmpfs of a user namespace cannot be opened; a bound one keeps its mount's
    flags), the usual links, and ``/dev/shm`` for its tmpfs."""
    _mount("adaexplore", "/dev", "tmpfs", _MS_NOSUID | _MS_NOEXEC, "size=65536,mode=755")
    for path, fd in device_fds.items():
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.makedirs(path, exist_ok=True)
        else:
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
        _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC)
    for source, link in _DEV_LINKS:
        os.symlink(source, link)
    os.makedirs("/dev/shm", exist_ok=True)


# What a process's /proc offers for writing beyond its own entries: settings of the whole machine
# (where the judge runs as root, the sandbox's user is root's mapping and could change them).
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/bus", "/proc/fs", "/proc/irq")
_PROC_FLAGS = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC


def mount_proc() -> None:
    """A /proc of this process's own PID namespace (only its own processes in it), the
    machine's settings in it read-only.

    The process's own entries stay writable: the CUDA driver cannot start without them (a
    read-only /proc gave every GPU evaluation ``cudaErrorOsCallFailed``). If the settings
    cannot be made read-only, the new /proc is taken away again and the error raised."""
    _mount("proc", "/proc", "proc", _PROC_FLAGS)
    try:
        for path in PROC_READ_ONLY:
            if os.path.lexists(path):
                _mount(path, path, None, _MS_BIND | _MS_REC)
                _mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _PROC_FLAGS)
    except OSError:
        _libc().umount2(b"/proc", ctypes.c_int(_MNT_DETACH))
        raise
