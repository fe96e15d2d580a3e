"""Once a user-code process has made its CUDA context, file locks lock nothing and file watches
are refused (``sandbox.seccomp.install_sealed``): two evaluations running at once cannot signal
each other through the files every sandbox sees. A red team passed a byte from one candidate to
another through eight ``flock`` locks on torch's package."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import struct

import pytest
import torch

from adaexplore_mcp.judge import Status
from adaexplore_mcp.judge.sandbox import seccomp
from adaexplore_mcp.tasks import get_bundled_task

from .kernels import module

pytestmark = pytest.mark.skipif(not seccomp.supported(), reason="no seccomp filter here")

SOFTMAX = get_bundled_task("softmax")
SHARED_FILE = torch.__file__  # read-only in every sandbox
F_OFD_SETLK, F_OFD_GETLK, F_NOTIFY, F_SETLEASE = 37, 36, 1026, 1024


def _write_lock() -> bytes:
    return struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)


def _probe() -> dict[str, object]:
    """What this process can still do with locks and watches on a file others can see."""
    seen: dict[str, object] = {}
    first, second = os.open(SHARED_FILE, os.O_RDONLY), os.open(SHARED_FILE, os.O_RDONLY)
    fcntl.flock(first, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        fcntl.flock(second, fcntl.LOCK_EX | fcntl.LOCK_NB)
        seen["flock_seen_from_another_file"] = False
    except BlockingIOError:
        seen["flock_seen_from_another_file"] = True
    ofd = os.open(SHARED_FILE, os.O_RDONLY)
    try:
        fcntl.fcntl(ofd, F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_RDLCK, os.SEEK_SET, 0, 1, 0))
        seen["ofd_lock"] = "taken"
    except OSError as error:
        seen["ofd_lock"] = errno.errorcode[error.errno]
    libc = ctypes.CDLL(None, use_errno=True)
    seen["inotify"] = libc.inotify_init1(0) >= 0 or errno.errorcode[ctypes.get_errno()]
    for name, command in (("notify", F_NOTIFY), ("lease", F_SETLEASE)):
        try:
            fcntl.fcntl(first, command, 0 if name == "notify" else fcntl.F_RDLCK)
            seen[name] = "granted"
        except OSError as error:
            seen[name] = errno.errorcode[error.errno]
    seen["getfl"] = fcntl.fcntl(first, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    return seen


def _in_child(seal: bool) -> dict[str, object]:
    """``_probe`` in a forked child under the first filter, sealed or not."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            seccomp.install(allow_processes=False)
            if seal:
                seccomp.install_sealed()
            os.write(write, json.dumps(_probe()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as answer:
        text = answer.read()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return json.loads(text)


def test_before_the_seal_a_lock_is_seen_from_another_file():
    """The channel itself: without the seal, a lock on a file every sandbox reads is seen."""
    seen = _in_child(seal=False)
    assert seen["flock_seen_from_another_file"] is True
    assert seen["inotify"] is True


def test_sealed_locks_lock_nothing_and_watches_are_refused():
    seen = _in_child(seal=True)
    assert seen["flock_seen_from_another_file"] is False
    assert seen["ofd_lock"] == "taken"  # it says so, and holds nothing
    assert seen["inotify"] == "EPERM"
    assert seen["notify"] == "EPERM" and seen["lease"] == "EPERM"
    assert seen["getfl"] is True  # fcntl's other commands work as before


def test_a_sealed_record_lock_is_invisible_to_other_processes():
    read, write = os.pipe()
    go_read, go_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            seccomp.install(allow_processes=False)
            seccomp.install_sealed()
            fd = os.open(SHARED_FILE, os.O_RDONLY)
            fcntl.fcntl(fd, F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0))
            fcntl.flock(fd, fcntl.LOCK_SH)
            os.write(write, b"held")
            os.read(go_read, 1)  # holds them until the parent has looked
            code = 0
        finally:
            os._exit(code)
    assert os.read(read, 4) == b"held"
    try:
        fd = os.open(SHARED_FILE, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # would fail against a real LOCK_SH
            answer = fcntl.fcntl(fd, F_OFD_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))
            assert struct.unpack("hhqqi", answer)[0] == fcntl.F_UNLCK
        finally:
            os.close(fd)
    finally:
        os.write(go_write, b"x")
        os.waitpid(pid, 0)


PROBE = f"""
import ctypes, fcntl, os
_first = os.open({SHARED_FILE!r}, os.O_RDONLY)
_second = os.open({SHARED_FILE!r}, os.O_RDONLY)
fcntl.flock(_first, fcntl.LOCK_EX | fcntl.LOCK_NB)
try:
    fcntl.flock(_second, fcntl.LOCK_EX | fcntl.LOCK_NB)
    SEEN = False
except BlockingIOError:
    SEEN = True  # another evaluation could read this bit
WATCH = ctypes.CDLL(None).inotify_init1(0) >= 0
"""
# the probe is a module the kernel writes into its working directory, past the source check
LOCK_SIGNAL = f"""
import os, sys
with open("lock_probe.py", "w") as _probe:
    _probe.write({PROBE!r})
sys.path.insert(0, os.getcwd())
from lock_probe import SEEN, WATCH
"""


def test_a_kernel_cannot_signal_through_locks_or_watches(unguarded_judge):
    """Through the judge: a kernel's process is sealed before its code loads."""
    kernel = module(
        "return torch.softmax(x, -1) if not (SEEN or WATCH) else torch.zeros_like(x)",
        prelude=LOCK_SIGNAL,
    )
    result = unguarded_judge.evaluate(SOFTMAX, kernel)
    assert result.status is Status.CORRECT, result.message
