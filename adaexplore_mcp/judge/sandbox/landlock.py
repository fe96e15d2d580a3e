"""Landlock: where no private mount namespace can be made, confine writes to a few directories.

Only the rights that change the filesystem are restricted (reads stay as they are), and they
are granted under the given directories alone. Needs Linux 5.13 with Landlock enabled.
"""

from __future__ import annotations

import ctypes
import os

_CREATE_RULESET = 444
_ADD_RULE = 445
_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_O_PATH = 0o10000000

_WRITE_FILE = 1 << 1
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE_CHAR = 1 << 6
_MAKE_DIR = 1 << 7
_MAKE_REG = 1 << 8
_MAKE_SOCK = 1 << 9
_MAKE_FIFO = 1 << 10
_MAKE_BLOCK = 1 << 11
_MAKE_SYM = 1 << 12
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3

_WRITES_V1 = (
    _WRITE_FILE
    | _REMOVE_DIR
    | _REMOVE_FILE
    | _MAKE_CHAR
    | _MAKE_DIR
    | _MAKE_REG
    | _MAKE_SOCK
    | _MAKE_FIFO
    | _MAKE_BLOCK
    | _MAKE_SYM
)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(number: int, *args) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc.syscall(ctypes.c_long(number), *args)


def abi_version() -> int:
    """Landlock's ABI version, or 0 when the kernel has none."""
    version = _syscall(
        _CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)
    )
    return max(int(version), 0)


def confine_writes(writable: list[str]) -> None:
    """From now on this process (and what it starts) may change files only under ``writable``.
    Raises ``OSError`` when Landlock is unavailable."""
    version = abi_version()
    if version < 1:
        raise OSError("Landlock is not available")
    handled = _WRITES_V1 | (_REFER if version >= 2 else 0) | (_TRUNCATE if version >= 3 else 0)
    attr = _RulesetAttr(handled)
    ruleset = _syscall(
        _CREATE_RULESET,
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
        ctypes.c_uint32(0),
    )
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for path in writable:
            if not os.path.exists(path):
                continue
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
            try:
                access = handled if os.path.isdir(path) else handled & (_WRITE_FILE | _TRUNCATE)
                rule = _PathBeneath(access, fd)
                if (
                    _syscall(
                        _ADD_RULE,
                        ctypes.c_int(ruleset),
                        ctypes.c_int(_RULE_PATH_BENEATH),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    )
                    != 0
                ):
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path} failed")
            finally:
                os.close(fd)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS, which landlock_restrict_self needs
        if _syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
