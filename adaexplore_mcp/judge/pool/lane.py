"""One device of the local judge: a bounded queue of evaluations and the warm workers that take
them, restarted when one dies."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from pydantic import BaseModel, Field

from adaexplore_mcp.judge.devices import GpuInfo
from adaexplore_mcp.judge.exceptions import JudgeUnavailable, QueueFull
from adaexplore_mcp.judge.pool.affinity import AffinityQueue
from adaexplore_mcp.judge.pool.worker_handle import WorkerDied, WorkerHandle
from adaexplore_mcp.judge.settings import JudgeSettings, TimingSettings
from adaexplore_mcp.judge.wire.jobs import (
    ChildOutcome,
    JobMessage,
    PhaseMessage,
    ReadyMessage,
    task_identity,
)

log = logging.getLogger(__name__)

_WATCHDOG_SLACK_S = 60.0
# A null panel's member is a CUDA context (``trusted.null_panel``): about half a GiB. A lane's
# workers may all start theirs at once, next to their first jobs' processes
_PANEL_CONTEXT_GB = 0.5
_PANEL_MEMORY_SHARE = 0.25


def panel_within_memory(
    timing: TimingSettings, gpu: GpuInfo | None, workers: int
) -> TimingSettings:
    """``timing``, without a null panel where every worker's panel at once would take more than
    a quarter of the GPU's memory. A smaller panel is no answer: its median is as much noise as
    correction (four members made the spread worse on an H200)."""
    wanted_gb = workers * timing.null_panel * _PANEL_CONTEXT_GB
    if gpu is None or wanted_gb <= _PANEL_MEMORY_SHARE * gpu.memory_gb:
        return timing
    log.info(
        "no null panel on %s: %d workers' panels of %d would take %.0f of its %.0f GB",
        gpu.name,
        workers,
        timing.null_panel,
        wanted_gb,
        gpu.memory_gb,
    )
    return timing.model_copy(update={"null_panel": 0})


class LaneStatus(BaseModel):
    """A snapshot of one device's queue and workers."""

    device: str = Field(description="'cpu' or 'cuda:N'.")
    device_name: str
    gpu: GpuInfo | None = None
    queued: int = Field(description="Evaluations waiting for a worker.")
    running: int = Field(description="Evaluations a worker is running now.")
    workers: int
    capacity: int = Field(description="Most evaluations that may wait; one more is refused.")
    served: int = Field(description="Jobs the workers have finished since the judge started.")


@dataclass
class Pending:
    message: JobMessage
    future: asyncio.Future[ChildOutcome]
    on_phase: Callable[[PhaseMessage], None] | None
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    enqueued: float = field(default_factory=time.monotonic)
    started: float | None = None
    passed_over: int = 0  # times a worker took a later job of the task it keeps

    @cached_property
    def affinity(self) -> str | None:
        return task_identity(self.message.child)

    def abandoned(self) -> bool:
        return self.future.done()


class Lane:
    """One device: its bounded queue and its workers."""

    def __init__(
        self,
        device: str,
        env: dict[str, str],
        settings: JudgeSettings,
        gpu: GpuInfo | None,
        lock: str | None,
    ) -> None:
        self.device = device
        self.env = env
        self.gpu = gpu
        self.lock = lock
        self.reuse = settings.reuse_workers
        self.sandbox_required = settings.sandbox.required
        default_workers = 2 if gpu is None else 4
        self.size = settings.workers_per_device or default_workers
        self.timing = panel_within_memory(settings.timing, gpu, self.size)
        # a worker takes a job of the task whose process it keeps first (``pool.affinity``)
        self.queue: AffinityQueue[Pending] = AffinityQueue(
            settings.max_queue, patience=2 * self.size
        )
        self.kept_task: list[str | None] = [None] * self.size  # by worker
        self.busy = 0
        self.served = 0
        self.handles: list[WorkerHandle | None] = [None] * self.size
        self.ready: ReadyMessage | None = None
        # this GPU's matmul peaks, by math, as evaluations measured them (``note_peak``)
        self.peaks: dict[str, float] = {}
        self._consumers: list[asyncio.Task] = []

    @property
    def load(self) -> int:
        return self.queue.qsize() + self.busy

    @property
    def device_name(self) -> str:
        return self.gpu.name if self.gpu else "cpu"

    def status(self) -> LaneStatus:
        return LaneStatus(
            device=self.device,
            device_name=self.device_name,
            gpu=self.gpu,
            queued=self.queue.qsize(),
            running=self.busy,
            workers=self.size,
            capacity=self.queue.maxsize,
            served=self.served,
        )

    async def start(self) -> None:
        if self.reuse:
            await asyncio.gather(*(self._ensure_worker(i) for i in range(self.size)))
        self._consumers = [asyncio.create_task(self._consume(i)) for i in range(self.size)]

    async def _ensure_worker(self, index: int) -> WorkerHandle:
        handle = self.handles[index]
        if handle is not None and handle.alive:
            return handle
        handle = WorkerHandle(f"{self.device}#{index}", self.env)
        try:
            self.ready = await handle.start()
        except WorkerDied as exc:
            raise JudgeUnavailable(str(exc)) from exc
        report = self.ready.sandbox
        if self.sandbox_required and not (
            (report.private_filesystem or report.landlock) and report.seccomp
        ):
            await handle.stop()
            why = "; ".join(report.notes) or "no reason given"
            raise JudgeUnavailable(
                "this machine cannot sandbox the processes that run kernels and tasks "
                f"({why}), and the judge will not run untrusted code without it; set "
                "ADAEXPLORE_JUDGE__SANDBOX__REQUIRED=false to rely on the process boundary "
                "alone (results then show what the sandbox enforced)"
            )
        self.handles[index] = handle
        return handle

    def submit(self, pending: Pending) -> None:
        if self.queue.full():
            self._drop_abandoned()
        try:
            self.queue.put_nowait(pending)
        except asyncio.QueueFull:
            raise QueueFull(
                f"the queue for {self.device} holds {self.queue.maxsize} evaluations already; "
                "retry when some have finished"
            ) from None

    def _drop_abandoned(self) -> None:
        # A caller that gave up (a client that disconnected) would otherwise hold its place in
        # a full queue until a worker reaches it, and newcomers would be refused for nothing.
        self.queue.drop_abandoned()

    async def _consume(self, index: int) -> None:
        while True:
            pending = await self.queue.get(self.kept_task[index])
            if pending.future.done():  # cancelled while it waited
                continue
            self.busy += 1
            self.kept_task[index] = None
            try:
                outcome = await self._run(index, pending)
                if outcome.end == "reported":  # the worker keeps the task's process (an eval's)
                    self.kept_task[index] = pending.affinity
                if not pending.future.done():
                    pending.future.set_result(outcome)
            except Exception as exc:
                if not pending.future.done():
                    pending.future.set_exception(exc)
            finally:
                self.busy -= 1
                self.served += 1

    async def _run(self, index: int, pending: Pending) -> ChildOutcome:
        pending.started = time.monotonic()
        for attempt in (1, 2):
            spawn_started = time.monotonic()
            handle = await self._ensure_worker(index)
            # a worker started for this job (fresh-process mode, or after a crash) is part of it
            spawn_s = time.monotonic() - spawn_started
            limit = pending.message.timeout_s + _WATCHDOG_SLACK_S
            try:
                outcome = await asyncio.wait_for(
                    handle.run(pending.message, pending.on_phase, pending.cancelled), limit
                )
                outcome.startup_s += spawn_s
                outcome.elapsed_s += spawn_s
                return outcome
            except (WorkerDied, TimeoutError) as exc:
                log.warning("worker %s lost during a job (%s); restarting it", handle.name, exc)
                await handle.stop(grace_s=0.5)
                self.handles[index] = None
                if attempt == 2:
                    return ChildOutcome(
                        end="crashed",
                        note="The kernel killed the judge's worker process, twice (it may only "
                        "touch its own process)",
                    )
            finally:
                if not self.reuse and self.handles[index] is not None:
                    await handle.stop()
                    self.handles[index] = None
        raise AssertionError("unreachable")

    def note_peak(self, math: str, tflop_s: float | None) -> None:
        """Keep the highest peak measured for ``math``. Measuring costs a trusted process
        0.15-0.25 s of the GPU held alone (a kernel of cuBLAS's loaded for each math) in every
        evaluation's timing: shared, each math is measured about once per GPU. The highest
        stays because a measurement can only be slowed down (by a kernel still running)."""
        if tflop_s and tflop_s > 0:
            self.peaks[math] = max(self.peaks.get(math, 0.0), tflop_s * 1e12)

    async def close(self) -> None:
        """Stop the consumers, fail what still waits, stop the workers. Cancelled meanwhile,
        it still fails the waiting jobs and stops the workers, then lets its caller's
        cancellation through (the consumers' own cancellations are theirs)."""
        for task in self._consumers:
            task.cancel()
        try:
            await asyncio.gather(*self._consumers, return_exceptions=True)
        finally:
            while not self.queue.empty():
                pending = self.queue.get_nowait()
                if not pending.future.done():
                    pending.future.set_exception(JudgeUnavailable("the judge shut down"))
            await asyncio.gather(*(h.stop() for h in self.handles if h is not None))
            self.handles = [None] * self.size
