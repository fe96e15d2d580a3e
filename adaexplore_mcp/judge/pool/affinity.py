"""A device's queue of evaluations, from which a worker takes first a job of the task it keeps.

A worker keeps the task process of its last evaluation for the next evaluation of the same
task (``worker.kept``), which then makes one CUDA context instead of two. So a free worker
takes the oldest queued job of its task, if there is one, before the oldest job. Fairness is
bounded: no job is passed over more than ``patience`` times; once the oldest has been, it is
the next one taken, whatever the worker keeps.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from typing import Generic, Protocol, TypeVar


class Queued(Protocol):
    passed_over: int

    @property
    def affinity(self) -> str | None:
        """The task's identity (``wire.jobs.task_identity``), for an evaluation."""

    def abandoned(self) -> bool: ...


Q = TypeVar("Q", bound=Queued)


class AffinityQueue(Generic[Q]):
    def __init__(self, maxsize: int, patience: int) -> None:
        self.maxsize = maxsize
        self.patience = patience
        self._items: deque[Q] = deque()
        self._waiters: deque[asyncio.Future[None]] = deque()

    def qsize(self) -> int:
        return len(self._items)

    def full(self) -> bool:
        return 0 < self.maxsize <= len(self._items)

    def empty(self) -> bool:
        return not self._items

    def put_nowait(self, item: Q) -> None:
        if self.full():
            raise asyncio.QueueFull
        self._items.append(item)
        self._wake_next()

    def get_nowait(self, affinity: str | None = None) -> Q:
        """The oldest job of ``affinity`` if one may be taken, else the oldest job."""
        if not self._items:
            raise asyncio.QueueEmpty
        index = self._choose(affinity)
        item = self._items[index]
        del self._items[index]
        for skipped in itertools.islice(self._items, index):
            skipped.passed_over += 1
        return item

    async def get(self, affinity: str | None = None) -> Q:
        while not self._items:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                if waiter.done() and not waiter.cancelled() and self._items:
                    self._wake_next()  # the wake-up this waiter took goes to another
                raise
        return self.get_nowait(affinity)

    def drop_abandoned(self) -> None:
        """Jobs whose callers gave up leave the queue (they would hold places in a full one)."""
        self._items = deque(item for item in self._items if not item.abandoned())

    def _choose(self, affinity: str | None) -> int:
        if affinity is None:
            return 0
        for index, item in enumerate(self._items):
            if item.affinity == affinity:
                return index
            if item.passed_over >= self.patience:
                return 0  # a job before the match has waited long enough
        return 0

    def _wake_next(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
