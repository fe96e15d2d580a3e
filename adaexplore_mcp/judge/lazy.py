"""A judge that starts on its first evaluation.

Starting the local pool imports torch and triton in every worker, which takes seconds and needs
the configured device. The server must answer ``list_tasks`` at once and start on a machine with
no GPU, so the judge is started only when something is to be evaluated, and a failed start is
retried on the next evaluation.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Unpack

from adaexplore_mcp.judge.request import EvalOptions
from adaexplore_mcp.judge.result import EvalResult, LintReport
from adaexplore_mcp.tasks import Task

if TYPE_CHECKING:
    from adaexplore_mcp.judge.interface import Judge


class LazyJudge:
    """Wraps a ``Judge`` (not yet started); satisfies the same protocol."""

    def __init__(self, judge: Judge) -> None:
        self.inner = judge
        self._started = False
        self._lock: asyncio.Lock | None = None

    @property
    def started(self) -> bool:
        return self._started

    @property
    def devices(self) -> list[str]:
        return self.inner.devices if self._started else []

    async def __aenter__(self) -> LazyJudge:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def start(self) -> None:
        if self._started:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if not self._started:
                await self.inner.start()
                self._started = True

    async def close(self) -> None:
        """Stops the judge; the next evaluation starts it again."""
        if self._started:
            self._started = False
            await self.inner.close()

    async def evaluate(
        self,
        task: Task,
        code: str,
        **options: Unpack[EvalOptions],
    ) -> EvalResult:
        await self.start()
        return await self.inner.evaluate(task, code, **options)

    async def lint(self, task: Task, *, device: str | None = None) -> LintReport:
        await self.start()
        return await self.inner.lint(task, device=device)

    def versions(self) -> dict[str, str]:
        return self.inner.versions() if self._started else {}
