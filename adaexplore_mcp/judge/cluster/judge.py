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
the caller gets a verdict from another actor or ``JudgeUnavailable``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any, Literal

from adaexplore_mcp.config import JudgeSettings, Ops, Precision, RaySettings
from adaexplore_mcp.judge.cluster.actor import ActorInfo, JudgeActor, Progress
from adaexplore_mcp.judge.cluster.head import Head, cluster_gone, head_of
from adaexplore_mcp.judge.cluster.placement import ActorPlan, ClusterLacks, plan_actors
from adaexplore_mcp.judge.cluster.raycalls import (
    awaited,
    first_line,
    import_ray,
    ray_actor_errors,
    translated,
)
from adaexplore_mcp.judge.exceptions import JudgeError, JudgeUnavailable
from adaexplore_mcp.judge.pool.baselines import Baseline, BaselineCache, add_speedups
from adaexplore_mcp.judge.pool.lane import LaneStatus
from adaexplore_mcp.judge.result import EvalResult, LintReport, ProgressCallback
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import Task

log = logging.getLogger(__name__)

_CLOSE_GRACE_S = 15.0


@dataclass
class _Slot:
    label: str
    handle: Any  # a Ray actor handle
    info: ActorInfo
    in_flight: int = 0
    served: int = 0
    state: Literal["ready", "recovering", "gone"] = "ready"
    recovery: asyncio.Task | None = field(default=None, repr=False)


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
        self._baselines = BaselineCache(store)
        self._slots: list[_Slot] = []
        self._starting = asyncio.Lock()
        self._connected_here = False
        self._head: Head | None = None
        self._gone: Head | None = None  # the head of a cluster that went away
        self._watch: asyncio.Task | None = None

    async def __aenter__(self) -> RayJudge:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def devices(self) -> list[str]:
        return [slot.label for slot in self._slots if slot.state != "gone"]

    def lanes_status(self) -> list[LaneStatus]:
        """Each live actor as a device: what this judge has sent it and it has not answered."""
        return [
            LaneStatus(
                device=slot.label,
                device_name=slot.info.device_name,
                gpu=slot.info.gpu,
                queued=0,
                running=slot.in_flight,
                workers=slot.info.workers,
                capacity=self.judge_settings.max_queue,
                served=slot.served,
            )
            for slot in self._slots
            if slot.state != "gone"
        ]

    def actor(self, device: str) -> Any:
        """The Ray actor handle behind a device of ``devices`` (to inspect or kill it)."""
        for slot in self._slots:
            if slot.label == device:
                return slot.handle
        raise JudgeUnavailable(f"this judge has no device {device!r}; it has {self.devices}")

    def versions(self) -> dict[str, str]:
        return next((slot.info.versions for slot in self._slots if slot.info.versions), {})

    # -- lifetime ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Joins the cluster and places the actors, their pools warm; a judge already started
        is left as it is."""
        async with self._starting:
            if not self._slots:
                await self._start()

    async def _start(self) -> None:
        ray = import_ray()
        if not ray.is_initialized():
            await asyncio.to_thread(self._connect, ray)
        self._head = head_of(self.address, ray)
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
        self._slots = [
            _Slot(label=f"{kind}:{i}", handle=handle, info=info)
            for i, (handle, info) in enumerate(zip(handles, infos, strict=True))
        ]
        if self._head is not None and self._connected_here:
            self._watch = asyncio.ensure_future(self._watch_head(ray, self._head))
        log.info(
            "judge actors on %s",
            ", ".join(f"{s.label} ({s.info.device_name} on {s.info.node})" for s in self._slots),
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
        slots, self._slots = self._slots, []
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        for slot in slots:
            if slot.recovery is not None:
                slot.recovery.cancel()
        if not slots or self._gone is not None:
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
        *,
        device: str | None = None,
        timeout_s: float | None = None,
        on_progress: ProgressCallback | None = None,
        precision: Precision | None = None,
        ops: Ops | None = None,
    ) -> EvalResult:
        """Judge one candidate on the least loaded actor (or the one ``device`` names); the
        same verdict the local judge gives."""
        lost: list[_Slot] = []
        while True:
            slot = await self._pick(device, avoid=lost)
            slot.in_flight += 1
            try:
                result = await self._stream(
                    slot, task, code, timeout_s, on_progress, precision, ops
                )
                break
            except ray_actor_errors() as exc:
                await self._lost(slot, exc, lost, f"the evaluation of {task.name}")
            finally:
                slot.in_flight -= 1
                slot.served += 1
        if result.ok and result.runtime is not None and slot.info.gpu is not None:
            policy = Precision(precision or self.judge_settings.precision)
            operators = Ops(ops or self.judge_settings.ops)
            try:
                add_speedups(result, await self._baseline(slot, task, policy, operators))
            except (JudgeError, *ray_actor_errors()) as exc:
                log.warning("no baseline for %s on %s: %s", task.name, slot.label, exc)
        return result

    async def _stream(
        self,
        slot: _Slot,
        task: Task,
        code: str,
        timeout_s: float | None,
        on_progress: ProgressCallback | None,
        precision: Precision | None,
        ops: Ops | None,
    ) -> EvalResult:
        ray = import_ray()
        stream = slot.handle.evaluate.remote(task, code, timeout_s, precision, ops)
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
            if self._gone is None:  # else this judge has left the cluster and its actors
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
        slot = await self._pick(device, avoid=[])
        policy = Precision(precision or self.judge_settings.precision)
        return await self._baseline(slot, task, policy, Ops(ops or self.judge_settings.ops))

    async def _baseline(self, slot: _Slot, task: Task, policy: Precision, ops: Ops) -> Baseline:
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
        lost: list[_Slot] = []
        while True:
            slot = await self._pick(device, avoid=lost)
            try:
                return await awaited(slot.handle.lint.remote(task))
            except ray_actor_errors() as exc:
                await self._lost(slot, exc, lost, f"the lint of {task.name}")

    # -- routing and faults --------------------------------------------------------------------

    async def _pick(self, device: str | None, avoid: list[_Slot]) -> _Slot:
        if self._gone is not None:
            raise cluster_gone(self._gone)
        if not self._slots:
            raise JudgeUnavailable("the judge is not started (use `async with RayJudge(...)`)")
        matching = [slot for slot in self._slots if _matches(slot.label, device)]
        if not matching:
            raise JudgeUnavailable(
                f"this judge has no device {device!r}; it has {', '.join(self.devices)}"
            )
        live = [slot for slot in matching if slot.state != "gone"]
        if not live:
            await self._raise_if_cluster_gone()
            raise JudgeUnavailable(
                f"every judge actor for {device or 'this judge'} is gone (their nodes left the "
                "Ray cluster, or they died more often than ADAEXPLORE_RAY__MAX_RESTARTS); "
                "`ray status` shows the cluster; start the command again to place new ones"
            )
        # an actor that just failed this evaluation, or is coming back, only when no other is
        return min(live, key=lambda s: (s in avoid, s.state == "recovering", s.in_flight, s.served))

    async def _lost(self, slot: _Slot, exc: Exception, lost: list[_Slot], what: str) -> None:
        """Books an actor lost mid-call; raises once ``what`` (the evaluation of a task, …)
        has been retried enough."""
        lost.append(slot)
        if slot.state == "ready":
            slot.state = "recovering"
            slot.recovery = asyncio.ensure_future(self._recover(slot))
        if len(lost) > self.settings.retries:
            await self._raise_if_cluster_gone(what)
            raise JudgeUnavailable(
                f"{what} lost its Ray actor on every attempt "
                f"({len(lost)}; last {slot.label}: {first_line(exc)}); the cluster is losing "
                "actors or nodes, `ray status` shows it. No verdict was recorded; evaluate again"
            ) from None
        log.warning("judge actor %s lost mid-evaluation (%s); retrying elsewhere", slot.label, exc)

    async def _raise_if_cluster_gone(self, in_flight: str | None = None) -> None:
        """The actors are lost: if the head does not answer either, the cluster went away (a
        restart, the end of an allocation) and only starting it again helps."""
        gone = self._gone
        if gone is None and self._head is not None and not await self._head.answers():
            gone = self._head
        if gone is not None:
            raise cluster_gone(gone, in_flight) from None

    async def _watch_head(self, ray: Any, head: Head) -> None:
        """Leaves a cluster whose head stopped answering. Ray ends a process that has been
        without its cluster's head for a minute (its GCS reconnection timeout), which would cut
        a run off wherever it is, even waiting on a model; leaving first turns it into an error
        on the next call, which the caller can report and a run can resume from."""
        await head.gone(self.settings.head_check_s)
        log.warning("the Ray cluster's head at %s stopped answering; leaving the cluster", head)
        self._gone = head
        for slot in self._slots:
            slot.state = "gone"
            if slot.recovery is not None:
                slot.recovery.cancel()
        if self._connected_here:
            self._connected_here = False
            await asyncio.to_thread(ray.shutdown)

    async def _recover(self, slot: _Slot) -> None:
        """Waits for Ray to restart the actor and its pool to warm; gives it up otherwise."""
        try:
            slot.info = await asyncio.wait_for(
                awaited(slot.handle.describe.remote()), self.settings.start_timeout_s
            )
            slot.state = "ready"
            log.info("judge actor %s is back on %s", slot.label, slot.info.node)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            slot.state = "gone"
            log.warning("judge actor %s is gone: %s", slot.label, exc)
            with contextlib.suppress(Exception):
                import_ray().kill(slot.handle, no_restart=True)


def _matches(label: str, device: str | None) -> bool:
    """'cpu' and 'cuda' name any actor of their kind; 'cuda:1' names one."""
    return device is None or label == device or label.split(":")[0] == device
