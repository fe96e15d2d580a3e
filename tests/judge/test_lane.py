"""A device's lane shutting down: what waits is failed, and a caller's cancellation of the
shutdown is its own, not swallowed with the consumers'."""

from __future__ import annotations

import asyncio

import pytest

from adaexplore_mcp.judge.exceptions import JudgeUnavailable
from adaexplore_mcp.judge.pool.lane import Lane, Pending
from adaexplore_mcp.judge.settings import JudgeSettings
from adaexplore_mcp.judge.wire.jobs import ChildJob, JobMessage


def _lane() -> Lane:
    return Lane("cpu", {}, JudgeSettings(), gpu=None, lock=None)


def _pending() -> Pending:
    message = JobMessage(id="waiting", timeout_s=10, child=ChildJob(kind="probe", device="cpu"))
    future = asyncio.get_running_loop().create_future()
    return Pending(message=message, future=future, on_phase=None)


def test_a_cancelled_shutdown_still_fails_what_waits_and_is_cancelled():
    async def scenario() -> None:
        lane = _lane()
        wound_down = asyncio.Event()

        async def consumer() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                await wound_down.wait()  # a consumer that takes a moment to stop
                raise

        lane._consumers = [asyncio.create_task(consumer())]
        waiting = _pending()
        lane.queue.put_nowait(waiting)
        await asyncio.sleep(0)
        closing = asyncio.create_task(lane.close())
        await asyncio.sleep(0.01)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        assert isinstance(waiting.future.exception(), JudgeUnavailable)
        wound_down.set()
        await asyncio.gather(*lane._consumers, return_exceptions=True)

    asyncio.run(scenario())


def test_a_shutdown_fails_what_waits_and_ends_its_consumers():
    async def scenario() -> None:
        lane = _lane()
        lane._consumers = [asyncio.create_task(asyncio.sleep(3600)) for _ in range(2)]
        waiting = _pending()
        lane.queue.put_nowait(waiting)
        await lane.close()
        assert all(task.cancelled() for task in lane._consumers)
        assert isinstance(waiting.future.exception(), JudgeUnavailable)

    asyncio.run(scenario())
