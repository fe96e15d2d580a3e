"""The judge's phases (queued, compiling, checking, timing) as MCP progress notifications, and a
heartbeat between them.

Clients give up on a request that stays silent (60 s is a common limit), and a judge that
starts its workers, or a long compile, can be silent for longer. So a notification goes out
when the call starts and then at least every ``interval_s``: the phase it is in and the seconds
since the call began. MCP wants progress to rise with every notification, so each phase is a
step (five per evaluation), a heartbeat moves a tenth of the way to the next step, and a tool
that evaluates several times (``best_kernel`` re-measuring) keeps counting up.

The judge reports a phase through a plain callback on the event loop; a notification is a
coroutine. The callback only records the phase, and a task beside the evaluation sends the
notifications in order.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from mcp.server.mcpserver import Context

from adaexplore_mcp.judge import Phase, ProgressCallback

log = logging.getLogger(__name__)

T = TypeVar("T")

_ORDER = {
    Phase.QUEUED: 1,
    Phase.COMPILING: 2,
    Phase.CHECKING: 3,
    Phase.TIMING: 4,
    Phase.DONE: 5,
}
_PER_EVALUATION = len(_ORDER)
_WORDS = {
    Phase.QUEUED: "queued for a worker",
    Phase.COMPILING: "compiling (loading the module and the first call)",
    Phase.CHECKING: "checking correctness",
    Phase.TIMING: "timing",
    Phase.DONE: "finishing",
}
_STARTING = "starting (the judge starts on the first evaluation)"


class _Progress:
    """Where the call stands: the value last sent and the words for the current phase."""

    def __init__(self, evaluations: int) -> None:
        self.evaluations = evaluations
        self.started = time.monotonic()
        self.offset = 0  # steps of the evaluations before the current one
        self.step = 0  # the current phase's step within its evaluation
        self.value = 0.0
        self.words = _STARTING

    def phase(self, phase: Phase) -> bool:
        step = _ORDER.get(phase)
        if step is None:
            return False
        if step <= self.step:  # a new evaluation started: count on from the last one
            self.offset += _PER_EVALUATION
        self.step = step
        self.value = float(self.offset + step)
        number = self.offset // _PER_EVALUATION + 1
        prefix = f"evaluation {number}/{self.evaluations}: " if self.evaluations > 1 else ""
        self.words = prefix + _WORDS[phase]
        return True

    def beat(self) -> None:
        ceiling = self.offset + self.step + 1
        self.value += (ceiling - self.value) / 10

    def notification(self) -> tuple[float, float, str]:
        elapsed = time.monotonic() - self.started
        total = float(self.evaluations * _PER_EVALUATION)
        return self.value, total, f"{self.words} ({elapsed:.0f} s)"


async def with_progress(
    ctx: Context,
    work: Callable[[ProgressCallback], Awaitable[T]],
    *,
    evaluations: int = 1,
    interval_s: float = 4.0,
) -> T:
    """Runs ``work(on_progress)`` while telling the client how it goes: at once, on every
    phase, and at least every ``interval_s`` between them."""
    progress = _Progress(evaluations)
    changed = anyio.Event()
    state = {"changed": changed}

    def on_progress(phase: Phase, elapsed_s: float) -> None:
        if progress.phase(phase):
            state["changed"].set()

    sent = [-1.0]

    async def send() -> None:
        value, total, message = progress.notification()
        if value <= sent[0]:  # already told: progress must rise with every notification
            return
        sent[0] = value
        try:
            await ctx.report_progress(value, total, message)
        except Exception as exc:  # a client gone away must not fail the evaluation
            log.debug("progress notification not sent: %s", exc)

    async def relay() -> None:
        await send()
        while True:
            with anyio.move_on_after(interval_s):
                await state["changed"].wait()
            if state["changed"].is_set():
                state["changed"] = anyio.Event()
            else:
                progress.beat()
            await send()

    outcome: list[T] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as group:
        group.start_soon(relay)
        try:
            outcome.append(await work(on_progress))
        except Exception as exc:  # raised below, outside the task group, unwrapped
            failure.append(exc)
        finally:
            group.cancel_scope.cancel()
    if failure:
        raise failure[0]
    return outcome[0]
