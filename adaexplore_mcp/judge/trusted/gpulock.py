"""A readers-writer lock on one GPU, shared by every process on the machine.

Compiling and checking take it shared: several evaluations may do that at once. Timing takes it
exclusively, so nothing else runs on the GPU while a kernel is measured. A writer waits at the
turnstile, which keeps new readers out until it has the GPU, so timing never starves behind a
stream of checks. ``flock`` locks die with their process, so a killed child never leaves the
GPU locked.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager


class GpuLock:
    def __init__(self, base_path: str) -> None:
        self._main_path = base_path + ".lock"
        self._turnstile_path = base_path + ".turnstile"
        self._main_fd: int | None = None

    def _open(self, path: str) -> int:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)

    @contextmanager
    def shared(self) -> Iterator[None]:
        turnstile = self._open(self._turnstile_path)
        try:
            fcntl.flock(turnstile, fcntl.LOCK_EX)
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        finally:
            os.close(turnstile)
        main = self._open(self._main_path)
        try:
            fcntl.flock(main, fcntl.LOCK_SH)
            yield
        finally:
            os.close(main)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        turnstile = self._open(self._turnstile_path)
        main = self._open(self._main_path)
        try:
            fcntl.flock(turnstile, fcntl.LOCK_EX)
            try:
                fcntl.flock(main, fcntl.LOCK_EX)
            finally:
                os.close(turnstile)
            yield
        finally:
            os.close(main)
