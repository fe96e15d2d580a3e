"""What runs inside each Ray actor: a ``LocalJudge`` on the one device Ray gave the actor.

The actor is trusted code like the pool it holds; user code still runs only in the pool's
sandboxed processes, so a kernel cannot reach the actor, let alone kill it. Everything that
crosses the cluster is a pydantic model (pickled by Ray), so the nodes need this package at
the same version as the caller.
"""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from pydantic import BaseModel, Field

from adaexplore_mcp.judge.devices import GpuInfo
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.judge.pool.baselines import Baseline
from adaexplore_mcp.judge.pool.local import LocalJudge
from adaexplore_mcp.judge.request import WireEvalOptions
from adaexplore_mcp.judge.result import EvalResult, LintReport, Phase
from adaexplore_mcp.judge.settings import JudgeSettings
from adaexplore_mcp.tasks import Task


class ActorInfo(BaseModel):
    """What an actor found on its node once its pool was warm."""

    node: str = Field(description="The node's host name.")
    pid: int
    device_name: str = Field(description="The GPU's model ('cpu' for the interpreter).")
    gpu: GpuInfo | None = None
    workers: int
    versions: dict[str, str]


class Progress(BaseModel):
    phase: Phase
    elapsed_s: float


def default_node_home() -> Path:
    """Where actors keep locks and caches when ``ray.node_home`` is not set: the node's own
    temporary directory, since the caller's home need not exist on the node."""
    return Path(tempfile.gettempdir()) / "adaexplore-ray"


class JudgeActor:
    """Made a Ray actor by ``RayJudge`` (``ray.remote(JudgeActor)``). Ray restarts it after a
    crash by calling ``__init__`` again; its pool starts on the first call that needs it."""

    def __init__(self, settings: JudgeSettings, gpu: bool, home: str | None) -> None:
        # Ray has made the actor's one GPU the only one visible; 'cuda' is that GPU
        device = "cuda" if gpu else "cpu"
        local = settings.model_copy(update={"device": device})
        self._judge = LocalJudge(local, home=Path(home) if home else default_node_home())

    async def describe(self) -> ActorInfo:
        """Starts the warm pool (if it is not started) and says what it runs on."""
        await self._judge.start()
        (lane,) = self._judge.lanes_status()
        return ActorInfo(
            node=socket.gethostname(),
            pid=os.getpid(),
            device_name=lane.device_name,
            gpu=lane.gpu,
            workers=lane.workers,
            versions=self._judge.versions(),
        )

    async def evaluate(
        self,
        task: Task,
        code: str,
        options: WireEvalOptions,
    ) -> AsyncIterator[Progress | EvalResult]:
        """The evaluation's phases as they come, then its result (without speedups: the caller
        holds the baselines, cached per GPU model for the whole cluster)."""
        await self._judge.start()
        phases: asyncio.Queue[Progress] = asyncio.Queue()

        def relay(phase: Phase, elapsed_s: float) -> None:
            phases.put_nowait(Progress(phase=phase, elapsed_s=elapsed_s))

        judged = asyncio.ensure_future(
            self._judge.evaluate(
                task,
                code,
                on_progress=relay,
                with_speedups=False,
                **options.params(),
            )
        )
        try:
            while not judged.done():
                next_phase = asyncio.ensure_future(phases.get())
                await asyncio.wait({judged, next_phase}, return_when=asyncio.FIRST_COMPLETED)
                if next_phase.done():
                    yield next_phase.result()
                else:
                    next_phase.cancel()
            yield judged.result()
        finally:
            # the caller went away (Ray cancelled this generator): stop the evaluation's processes
            judged.cancel()

    async def baseline(self, task: Task, precision: Precision, ops: Ops) -> Baseline:
        await self._judge.start()
        return await self._judge.baseline(task, precision=precision, ops=ops)

    async def lint(self, task: Task) -> LintReport:
        await self._judge.start()
        return await self._judge.lint(task)

    async def close(self) -> None:
        await self._judge.close()
