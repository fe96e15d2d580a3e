"""Memory the resident trusted process gives back to the GPU between jobs, when that keeps no
job waiting.

Giving memory back unmaps pages of the GPU, which would disturb another worker's timing, so it
is done holding the GPU lock shared. Waiting for that lock after every job kept the next job
waiting too: on an H200 with four workers, a trusted process waited up to 1.6 s (0.5 s on
average) for another worker's timing to end before it read its next order. So what a job leaves
(the allocator's cache; the arenas of jobs whose processes are reaped) is *owed*, and given back:

- at once, when the lock can be had without waiting;
- waiting for the lock, when the worker has sent no order for ``IDLE_S`` (nothing is waiting);
- waiting for the lock, when more than ``limit_bytes`` is owed: a large job's cache must not sit
  on memory the other workers' processes need.

Until then the allocator serves the next job from its cache, and the arenas stay allocated: an
arena is freed later than before, never reused earlier (``trusted.resident``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Protocol

from adaexplore_mcp.judge.trusted.gpulock import GpuLock

IDLE_S = 0.25


class Freeable(Protocol):
    size: int

    def free(self) -> None: ...


class Giveback:
    def __init__(
        self,
        lock: GpuLock | None,
        *,
        limit_bytes: int,
        cached_bytes: Callable[[], int],
        empty_cache: Callable[[], None],
    ) -> None:
        """``lock``: the GPU's (None: no GPU, nothing to wait for). ``cached_bytes``: what the
        allocator holds beyond what is in use; ``empty_cache`` gives that back."""
        self._lock = lock
        self._limit = limit_bytes
        self._cached_bytes = cached_bytes
        self._empty_cache = empty_cache
        self._arenas: list[Freeable] = []
        self._cache = False

    @property
    def owed(self) -> bool:
        return bool(self._arenas) or self._cache

    def owed_bytes(self) -> int:
        cached = self._cached_bytes() if self._cache else 0
        return cached + sum(arena.size for arena in self._arenas)

    def owe(self, arenas: Iterable[Freeable] = (), *, cache: bool = False) -> None:
        self._arenas.extend(arenas)
        self._cache = self._cache or cache

    def settle(self, *, wait: bool = False) -> bool:
        """Give back what is owed if the lock is free now, or, when ``wait`` or more than the
        limit is owed, once it is. True when nothing is owed any more."""
        if not self.owed:
            return True
        held = self._take(wait or self.owed_bytes() > self._limit)
        if held is None:
            return False
        try:
            arenas, self._arenas = self._arenas, []
            for arena in arenas:
                arena.free()
            if self._cache:
                self._cache = False
                self._empty_cache()
        finally:
            if held >= 0:
                os.close(held)
        return True

    def _take(self, wait: bool) -> int | None:
        """The lock's descriptor, -1 where there is no lock, None when it is not free now."""
        if self._lock is None:
            return -1
        return self._lock.acquire_shared() if wait else self._lock.try_shared()
