"""The judge's phases (queued, compiling, checking, timing) as MCP progress notifications.

The judge reports a phase through a plain callback on the event loop; a notification is a
coroutine. The callback only queues the phase, and a task beside the evaluation sends the
notifications in order. MCP wants progress to rise, so each phase is a step (five per
evaluation) and a tool that evaluates several times (``best_kernel`` re-measuring) keeps
counting up.
"""

from __future__ import annotations

import logging
import math
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


async def with_progress(
    ctx: Context,
    work: Callable[[ProgressCallback], Awaitable[T]],
    *,
    evaluations: int = 1,
) -> T:
    """Runs ``work(on_progress)`` while relaying its phases to the client. Cancelling the
    request cancels ``work`` (the judge then kills the candidate's child)."""
    send, receive = anyio.create_memory_object_stream[tuple[int, str]](math.inf)
    state = {"offset": 0, "last": 0}

    def on_progress(phase: Phase, elapsed_s: float) -> None:
        step = _ORDER.get(phase)
        if step is None:
            return
        value = state["offset"] + step
        if value <= state["last"]:  # a new evaluation started: count on from the last one
            state["offset"] += _PER_EVALUATION
            value = state["offset"] + step
        state["last"] = value
        number = state["offset"] // _PER_EVALUATION + 1
        prefix = f"evaluation {number}/{evaluations}: " if evaluations > 1 else ""
        send.send_nowait((value, f"{prefix}{_WORDS[phase]} ({elapsed_s:.1f} s)"))

    async def relay() -> None:
        async with receive:
            async for value, message in receive:
                try:
                    await ctx.report_progress(value, evaluations * _PER_EVALUATION, message)
                except Exception as exc:  # a client gone away must not fail the evaluation
                    log.debug("progress notification not sent: %s", exc)

    outcome: list[T] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as group:
        group.start_soon(relay)
        try:
            outcome.append(await work(on_progress))
        except Exception as exc:  # raised below, outside the task group, unwrapped
            failure.append(exc)
        finally:
            send.close()
    if failure:
        raise failure[0]
    return outcome[0]
