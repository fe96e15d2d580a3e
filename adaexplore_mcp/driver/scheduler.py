"""Which (task, step) a free worker takes next.

Each task has the step numbers 1..N; a number is taken when a worker claims it and finished
when its record is written. A resumed run starts with the numbers ``events.jsonl`` holds as
finished, so the numbers an interruption left open (their folders lack ``step.json``) are taken
again, lowest first. A worker goes to the task with the fewest steps running, then the fewest
finished, so tasks go forward together; ``limit`` caps the steps of one task in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from adaexplore_mcp.driver.steps import DrivenTask
from adaexplore_mcp.rundir import StepRecord


class Scheduler:
    def __init__(
        self,
        tasks: list[DrivenTask],
        steps: int,
        limit: int,
        *,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self._tasks = tasks
        self._steps = steps
        self._limit = limit
        self._on_change = on_change
        # one event loop, no threads: the state needs no lock, only a wake-up for waiters
        self._changed = asyncio.Event()

    def _open_step(self, task: DrivenTask) -> int | None:
        if len(task.running) >= self._limit:
            return None
        for number in range(1, self._steps + 1):
            if number not in task.records and number not in task.running:
                return number
        return None

    async def claim(self) -> tuple[DrivenTask, int] | None:
        """The next step to take; None once every step is finished or taken by another worker
        that will finish it. Waits while the only open steps wait on running ones."""
        while True:
            choices = []
            for order, task in enumerate(self._tasks):
                number = self._open_step(task)
                if number is not None:
                    choices.append(((len(task.running), len(task.records), order), task, number))
            if choices:
                _, task, number = min(choices, key=lambda choice: choice[0])
                task.running.add(number)
                self._changed_now()
                return task, number
            if not any(task.running for task in self._tasks):
                return None
            self._changed.clear()
            await self._changed.wait()

    def release(self, task: DrivenTask, number: int, record: StepRecord | None) -> None:
        """A step ended: finished with its record, or (None) not recorded and open again."""
        task.running.discard(number)
        if record is not None:
            task.records[number] = record
        self._changed_now()

    def _changed_now(self) -> None:
        self._changed.set()
        if self._on_change is not None:
            self._on_change()
