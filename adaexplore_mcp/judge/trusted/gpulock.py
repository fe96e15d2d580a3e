"""A readers-writer lock on one GPU, shared by every process on the machine.

Compiling and checking take it shared: several evaluations may do that at once. Timing takes it
exclusively, so nothing else runs on the GPU while a kernel is measured. A writer waits at the
turnstile, which keeps new readers out until it has the GPU, so timing never starves behind a
stream of checks. ``flock`` locks die with their process, so a killed child never leaves the
GPU locked.

A shared hold can be let go and taken again (``SharedHold``): the candidate's Triton compiles,
which need the CPU and not the GPU, run without it, so a compile never keeps a timing waiting.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager


class GpuLock:
    def __init__(self, base_path: str) -> None:
        self._main_path = base_path + ".lock"
        self._turnstile_path = base_path + ".turnstile"
        self._main_fd: int | None = None

    def _open(self, path: str) -> int:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)

    def files(self) -> tuple[int, int]:
        """The turnstile's and the lock's files, open: for a process that will lose sight of
        their paths before it takes the lock (``shared_through``)."""
        return self._open(self._turnstile_path), self._open(self._main_path)

    def shared(self) -> SharedHold:
        """The lock held shared for a ``with`` block."""
        return SharedHold(self)

    def acquire_shared(self) -> int:
        """Past the turnstile, then the lock shared; the descriptor to close to release it."""
        main = self._shared(wait=True)
        assert main is not None  # a blocking flock does not give up
        return main

    def try_shared(self) -> int | None:
        """The lock shared if no writer holds it or waits for it, without waiting: the
        descriptor to close to release it, else None."""
        return self._shared(wait=False)

    def _shared(self, *, wait: bool) -> int | None:
        """Past the turnstile, then the lock shared; None where either is taken and not
        ``wait``."""
        nonblocking = 0 if wait else fcntl.LOCK_NB
        turnstile = self._open(self._turnstile_path)
        try:
            try:
                fcntl.flock(turnstile, fcntl.LOCK_EX | nonblocking)
            except BlockingIOError:
                return None
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        finally:
            os.close(turnstile)
        main = self._open(self._main_path)
        try:
            fcntl.flock(main, fcntl.LOCK_SH | nonblocking)
        except BlockingIOError:
            os.close(main)
            return None
        except BaseException:
            os.close(main)
            raise
        return main

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


@contextmanager
def shared_through(turnstile: int, main: int) -> Iterator[None]:
    """The lock held shared through its files opened beforehand (``GpuLock.files``); released
    explicitly, since another descriptor of the same file may outlive these."""
    fcntl.flock(turnstile, fcntl.LOCK_EX)
    fcntl.flock(turnstile, fcntl.LOCK_UN)
    fcntl.flock(main, fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(main, fcntl.LOCK_UN)


class SharedHold:
    """The lock held shared; ``let_go`` and ``take`` within the block (both idempotent)."""

    def __init__(self, lock: GpuLock) -> None:
        self._lock = lock
        self._main: int | None = None
        self.waited_s = 0.0  # for the lock, over every take

    def __enter__(self) -> SharedHold:
        self.take()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.let_go()

    @property
    def held(self) -> bool:
        return self._main is not None

    def take(self) -> None:
        if self._main is None:
            begun = time.perf_counter()
            self._main = self._lock.acquire_shared()
            self.waited_s += time.perf_counter() - begun

    def let_go(self) -> None:
        if self._main is not None:
            os.close(self._main)
            self._main = None


class NoHold:
    """Where there is no GPU lock (the CPU): a hold that holds nothing."""

    waited_s = 0.0

    def __enter__(self) -> NoHold:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def take(self) -> None:
        pass

    def let_go(self) -> None:
        pass
