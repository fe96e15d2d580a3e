"""The judge on a Ray cluster, behind the same interface as ``LocalJudge`` and ``RemoteJudge``.

    async with RayJudge("ray", settings.judge, settings.ray, store=store) as judge:
        result = await judge.evaluate(task, code)

One actor per GPU (``num_gpus=1``: Ray places it and makes that GPU the only one it sees), each
holding a local judge's warm pool, so compiles overlap and timing holds its GPU alone as on one
host. Evaluations go to the least loaded actor. Baselines are timed by an actor and cached here,
in the caller's store, per GPU model: one H100's baseline serves every H100 of the cluster.

Faults, with Ray's own mechanisms where they fit: Ray restarts an actor that died
(``max_restarts``); an evaluation whose actor or node died is sent to another actor here
(``retries``; Ray's ``max_task_retries`` is 0 because it would wait for the same actor's restart
and pool warm-up while others are ready). A verdict is only ever the one result the actor sent,
so a retried evaluation is never recorded twice, and a lost actor is never blamed on the kernel:
the caller gets a verdict from another actor or ``JudgeUnavailable``. Which actor takes a
call, and what losing one means, is ``roster.py``'s; this module places them and judges.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Unpack

from adaexplore_mcp.judge.cluster.actor import JudgeActor, Progress
from adaexplore_mcp.judge.cluster.head import Head, head_of
from adaexplore_mcp.judge.cluster.placement import ActorPlan, ClusterLacks, plan_actors
from adaexplore_mcp.judge.cluster.raycalls import (
    awaited,
    import_ray,
    ray_actor_errors,
    translated,
)
from adaexplore_mcp.judge.cluster.roster import ActorRoster, ActorSlot
from adaexplore_mcp.judge.exceptions import JudgeError, JudgeUnavailable
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.judge.pool.baselines import Baseline, BaselineCache, add_speedups
from adaexplore_mcp.judge.pool.lane import LaneStatus
from adaexplore_mcp.judge.request import EvalOptions, WireEvalOptions
from adaexplore_mcp.judge.result import EvalResult, LintReport, ProgressCallback
from adaexplore_mcp.judge.settings import JudgeSettings, RaySettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import Task

log = logging.getLogger(__name__)

_CLOSE_GRACE_S = 15.0


class RayJudge:
    def __init__(
        self,
        address: str,
        judge: JudgeSettings,
        settings: RaySettings,
        *,
        store: Store | None = None,
    ) -> None:
        """``address``: 'ray' (the cluster at RAY_ADDRESS, else a new local one) or
        'ray://HOST:PORT' (a cluster's Ray Client server)."""
        self.address = address
        self.judge_settings = judge
        self.settings = settings
        self._baselines = BaselineCache(store, calls_per_gate=judge.timing.calls_per_gate)
        self._roster = ActorRoster(settings)
        self._starting = asyncio.Lock()
        self._connected_here = False
        self._watch: asyncio.Task | None = None

    async def __aenter__(self) -> RayJudge:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def devices(self) -> list[str]:
        return self._roster.devices

    def lanes_status(self) -> list[LaneStatus]:
        """Each live actor as a device: what this judge has sent it and it has not answered."""
        return self._roster.lanes_status(self.judge_settings.max_queue)

    def actor(self, device: str) -> Any:
        """The Ray actor handle behind a device of ``devices`` (to inspect or kill it)."""
        return self._roster.actor(device)

    def versions(self) -> dict[str, str]:
        return self._roster.versions()

    # -- lifetime ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Joins the cluster and places the actors, their pools warm; a judge already started
        is left as it is."""
        async with self._starting:
            if not self._roster.slots:
                await self._start()

    async def _start(self) -> None:
        ray = import_ray()
        if not ray.is_initialized():
            await asyncio.to_thread(self._connect, ray)
        self._roster.head = head = head_of(self.address, ray)
        plan = await self._plan(ray)
        actor_class = ray.remote(JudgeActor).options(
            num_gpus=1 if plan.gpu else 0,
            num_cpus=self.settings.cpus_per_actor,
            max_restarts=self.settings.max_restarts,
            max_task_retries=0,
            scheduling_strategy="SPREAD",
        )
        handles = [
            actor_class.remote(self.judge_settings, plan.gpu, self.settings.node_home)
            for _ in range(plan.count)
        ]
        try:
            infos = await asyncio.wait_for(
                asyncio.gather(*(awaited(h.describe.remote()) for h in handles)),
                self.settings.start_timeout_s,
            )
        except BaseException as exc:
            for handle in handles:
                ray.kill(handle, no_restart=True)
            if not isinstance(exc, Exception):
                raise
            if isinstance(exc, TimeoutError):
                raise JudgeUnavailable(
                    f"the Ray cluster did not place and warm {plan.count} judge actors within "
                    f"{self.settings.start_timeout_s:g} s; `ray status` shows what is free "
                    "(ADAEXPLORE_RAY__START_TIMEOUT_S gives them longer)"
                ) from None
            raise translated(exc, "a judge actor could not start") from None
        kind = "cuda" if plan.gpu else "cpu"
        self._roster.slots = [
            ActorSlot(label=f"{kind}:{i}", handle=handle, info=info)
            for i, (handle, info) in enumerate(zip(handles, infos, strict=True))
        ]
        if head is not None and self._connected_here:
            self._watch = asyncio.ensure_future(self._watch_head(ray, head))
        log.info(
            "judge actors on %s",
            ", ".join(
                f"{s.label} ({s.info.device_name} on {s.info.node})" for s in self._roster.slots
            ),
        )

    async def _plan(self, ray: Any) -> ActorPlan:
        """The actors to place, once the resources they need are free: those of actors that
        were just killed (a judge closed a moment ago) come back within seconds. A cluster
        without the resource at all (no GPU on any node) is refused at once."""
        deadline = asyncio.get_running_loop().time() + self.settings.placement_wait_s
        while True:
            try:
                return plan_actors(
                    self.judge_settings.device,
                    self.settings,
                    cluster=ray.cluster_resources(),
                    free=ray.available_resources(),
                )
            except ClusterLacks:
                raise
            except JudgeUnavailable:
                if asyncio.get_running_loop().time() >= deadline:
                    raise
                await asyncio.sleep(0.5)

    def _connect(self, ray: Any) -> None:
        address = None if self.address == "ray" else self.address  # None: RAY_ADDRESS or local
        try:
            ray.init(
                address=address,
                namespace=self.settings.namespace,
                include_dashboard=False,
                log_to_driver=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise JudgeUnavailable(
                f"cannot join the Ray cluster at {self.address} ({exc}); is it running "
                "(`ray status`), and is RAY_ADDRESS or ray://HOST:PORT right?"
            ) from None
        self._connected_here = True

    async def close(self) -> None:
        """Stops every actor's pool and the actors; leaves the cluster if this judge joined it."""
        slots = self._roster.take_all()
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if not slots or self._roster.gone is not None:
            # the actors went with their cluster, and this judge has left it: any call into
            # Ray now would join the cluster at RAY_ADDRESS again and wait on a head that is gone
            return
        ray = import_ray()
        live = [slot for slot in slots if slot.state != "gone"]
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                asyncio.gather(
                    *(awaited(slot.handle.close.remote()) for slot in live),
                    return_exceptions=True,
                ),
                _CLOSE_GRACE_S,
            )
        for slot in slots:
            with contextlib.suppress(Exception):
                ray.kill(slot.handle, no_restart=True)
        if self._connected_here:
            self._connected_here = False
            await asyncio.to_thread(ray.shutdown)

    # -- judging -------------------------------------------------------------------------------

    async def evaluate(
        self,
        task: Task,
        code: str,
        **options: Unpack[EvalOptions],
    ) -> EvalResult:
        """Judge one candidate on the least loaded actor (or the one ``device`` names); the
        same verdict the local judge gives."""
        # the device names the actor; the actor's pool has just that one
        sent = WireEvalOptions.of(options, device=None)
        lost: list[ActorSlot] = []
        while True:
            slot = await self._roster.pick(options.get("device"), avoid=lost)
            slot.in_flight += 1
            try:
                result = await self._stream(slot, task, code, sent, options.get("on_progress"))
                break
            except ray_actor_errors() as exc:
                await self._roster.lost(slot, exc, lost, f"the evaluation of {task.name}")
            finally:
                slot.in_flight -= 1
                slot.served += 1
        if result.ok and result.runtime is not None and slot.info.gpu is not None:
            policy = Precision(sent.precision or self.judge_settings.precision)
            operators = Ops(sent.ops or self.judge_settings.ops)
            no_baseline: tuple[type[Exception], ...] = (JudgeError, *ray_actor_errors())
            try:
                add_speedups(result, await self._baseline(slot, task, policy, operators))
            except no_baseline as exc:
                log.warning("no baseline for %s on %s: %s", task.name, slot.label, exc)
        return result

    async def _stream(
        self,
        slot: ActorSlot,
        task: Task,
        code: str,
        options: WireEvalOptions,
        on_progress: ProgressCallback | None,
    ) -> EvalResult:
        ray = import_ray()
        stream = slot.handle.evaluate.remote(task, code, options)
        try:
            async for ref in stream:
                item = await awaited(ref)
                if isinstance(item, Progress):
                    if on_progress is not None:
                        on_progress(item.phase, item.elapsed_s)
                else:
                    return item
        except asyncio.CancelledError:
            # the caller went away: the actor stops the evaluation's processes
            if self._roster.gone is None:  # else this judge has left the cluster and its actors
                with contextlib.suppress(Exception):
                    ray.cancel(stream)
            raise
        raise JudgeError(f"the judge actor {slot.label} ended the evaluation without a result")

    async def baseline(
        self,
        task: Task,
        *,
        device: str | None = None,
        precision: Precision | None = None,
        ops: Ops | None = None,
    ) -> Baseline:
        """The task's eager and torch.compile timings on a GPU model of the cluster, cached per
        task, GPU model, versions and policies."""
        slot = await self._roster.pick(device, avoid=[])
        policy = Precision(precision or self.judge_settings.precision)
        return await self._baseline(slot, task, policy, Ops(ops or self.judge_settings.ops))

    async def _baseline(self, slot: ActorSlot, task: Task, policy: Precision, ops: Ops) -> Baseline:
        if slot.info.gpu is None:
            raise JudgeError("baselines are timed on a GPU; this device is the CPU interpreter")

        async def measure() -> Baseline:
            return await awaited(slot.handle.baseline.remote(task, policy, ops))

        return await self._baselines.get(
            task,
            device_name=slot.info.device_name,
            torch=slot.info.versions.get("torch", ""),
            triton=slot.info.versions.get("triton", ""),
            precision=policy,
            ops=ops,
            measure=measure,
        )

    async def lint(self, task: Task, *, device: str | None = None) -> LintReport:
        lost: list[ActorSlot] = []
        while True:
            slot = await self._roster.pick(device, avoid=lost)
            try:
                return await awaited(slot.handle.lint.remote(task))
            except ray_actor_errors() as exc:
                await self._roster.lost(slot, exc, lost, f"the lint of {task.name}")

    # -- the cluster going away ---------------------------------------------------------------

    async def _watch_head(self, ray: Any, head: Head) -> None:
        """Leaves a cluster whose head stopped answering. Ray ends a process that has been
        without its cluster's head for a minute (its GCS reconnection timeout), which would cut
        a run off wherever it is, even waiting on a model; leaving first turns it into an error
        on the next call, which the caller can report and a run can resume from."""
        await head.gone(self.settings.head_check_s)
        log.warning("the Ray cluster's head at %s stopped answering; leaving the cluster", head)
        self._roster.leave(head)
        if self._connected_here:
            self._connected_here = False
            await asyncio.to_thread(ray.shutdown)
