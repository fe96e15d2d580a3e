"""Evaluations that outlive the request that asked for them.

A step's evaluation is the server's work, not the request's: a client that times out, is
cancelled or goes away does not stop it, and its node is recorded as if the client had waited.
The same step sent again while it runs (same key: search, parent and kernel) attaches to it and
gets the same answer, with its progress from where it is; nothing is evaluated twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from adaexplore_mcp.judge import Phase, ProgressCallback

log = logging.getLogger(__name__)

T = TypeVar("T")


class _Running(Generic[T]):
    """One evaluation and the requests listening to its progress."""

    def __init__(self) -> None:
        self.listeners: list[ProgressCallback] = []
        self.last: tuple[Phase, float] | None = None
        self.task: asyncio.Task[T] | None = None

    def progress(self, phase: Phase, elapsed_s: float) -> None:
        self.last = (phase, elapsed_s)
        for listener in list(self.listeners):
            listener(phase, elapsed_s)


class RunningSteps(Generic[T]):
    """The evaluations in flight in this process, by key."""

    def __init__(self) -> None:
        self._running: dict[Hashable, _Running[T]] = {}

    def __len__(self) -> int:
        return len(self._running)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._running

    async def run(
        self,
        key: Hashable,
        work: Callable[[ProgressCallback], Awaitable[T]],
        on_progress: ProgressCallback | None = None,
    ) -> T:
        """``work(progress)``'s result, from a task of its own that cancelling this call does
        not stop; joins the one already running under ``key`` if there is one."""
        running = self._running.get(key)
        if running is None:
            running = _Running[T]()
            self._running[key] = running
            running.task = asyncio.get_running_loop().create_task(self._own(key, running, work))
            running.task.add_done_callback(_retrieved)
        elif on_progress is not None and running.last is not None:
            on_progress(*running.last)  # a late joiner hears where the evaluation stands
        if on_progress is not None:
            running.listeners.append(on_progress)
        try:
            assert running.task is not None
            return await asyncio.shield(running.task)
        finally:
            if on_progress is not None:
                running.listeners.remove(on_progress)

    async def _own(
        self, key: Hashable, running: _Running[T], work: Callable[[ProgressCallback], Awaitable[T]]
    ) -> T:
        try:
            return await work(running.progress)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not running.listeners:  # nobody waits to be told: say it here
                log.warning("a step nobody waits for failed: %s", exc)
            raise
        finally:
            self._running.pop(key, None)

    async def close(self) -> None:
        """Cancels what is still running (the server is stopping): nothing more is recorded."""
        tasks = [r.task for r in self._running.values() if r.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _retrieved(task: asyncio.Task) -> None:
    # a failure is the waiters' to report (or _own's, when none waits): asyncio need not
    if not task.cancelled():
        task.exception()
