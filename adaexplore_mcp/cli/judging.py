"""The judge's lifetime for the commands that evaluate: which device a request names, and a
judge started for one piece of work and stopped after it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from adaexplore_mcp.app import open_app
from adaexplore_mcp.cli.common import EXIT_JUDGE, err, fail
from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge import Judge, JudgeError
from adaexplore_mcp.judge.devices import parse_device_spec
from adaexplore_mcp.judge.settings import is_ray_address
from adaexplore_mcp.tasks import TaskError

T = TypeVar("T")


def request_device(settings: Settings, device: str | None) -> str | None:
    """The device an evaluation names: a local judge was started on --device already; a judge
    service picks its least busy device unless one is named."""
    if not settings.remote.url or device is None:
        return None
    spec = parse_device_spec(device)
    if spec.kind == "cpu":
        return "cpu"
    if spec.indices is not None and len(spec.indices) == 1:
        return f"cuda:{spec.indices[0]}"
    if spec.indices is not None:
        raise fail("with --judge, --device names one device (cpu or cuda:N), or none")
    return None


def with_judge(settings: Settings, work: Callable[[Judge], Awaitable[T]]) -> T:
    async def main() -> T:
        where = _judge_named(settings.remote.url)
        async with open_app(settings) as app:
            with err.status(f"starting {where}…"):
                await app.judge.start()
            # the judge itself, started: a problem set sizes its concurrency from its lanes
            return await work(app.judge.inner)

    try:
        return asyncio.run(main())
    except TaskError as exc:
        raise fail(str(exc)) from None
    except JudgeError as exc:
        raise fail(f"the judge could not run: {exc}", EXIT_JUDGE) from None
    except ValueError as exc:
        raise fail(str(exc)) from None


def _judge_named(url: str | None) -> str:
    if is_ray_address(url):
        return "the judge actors on the Ray cluster" + ("" if url == "ray" else f" at {url}")
    return f"the judge service at {url}" if url else "the judge"
