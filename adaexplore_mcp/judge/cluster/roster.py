"""The Ray judge's actors: which are ready, coming back or gone, which one takes the next call,
and what losing one mid-call means (another takes it, Ray restarts the lost one, and a cluster
whose head no longer answers is reported as gone)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any, Literal

from adaexplore_mcp.judge.cluster.actor import ActorInfo
from adaexplore_mcp.judge.cluster.head import Head, cluster_gone
from adaexplore_mcp.judge.cluster.raycalls import awaited, first_line, import_ray
from adaexplore_mcp.judge.exceptions import JudgeUnavailable
from adaexplore_mcp.judge.pool.lane import LaneStatus
from adaexplore_mcp.judge.settings import RaySettings

log = logging.getLogger(__name__)


@dataclass
class ActorSlot:
    label: str
    handle: Any  # a Ray actor handle
    info: ActorInfo
    in_flight: int = 0
    served: int = 0
    state: Literal["ready", "recovering", "gone"] = "ready"
    recovery: asyncio.Task | None = field(default=None, repr=False)


class ActorRoster:
    def __init__(self, settings: RaySettings) -> None:
        self.settings = settings
        self.slots: list[ActorSlot] = []
        self.head: Head | None = None
        self.gone: Head | None = None  # the head of a cluster that went away

    @property
    def devices(self) -> list[str]:
        return [slot.label for slot in self.slots if slot.state != "gone"]

    def lanes_status(self, capacity: int) -> list[LaneStatus]:
        """Each live actor as a device: what this judge has sent it and it has not answered."""
        return [
            LaneStatus(
                device=slot.label,
                device_name=slot.info.device_name,
                gpu=slot.info.gpu,
                queued=0,
                running=slot.in_flight,
                workers=slot.info.workers,
                capacity=capacity,
                served=slot.served,
            )
            for slot in self.slots
            if slot.state != "gone"
        ]

    def actor(self, device: str) -> Any:
        """The Ray actor handle behind a device of ``devices`` (to inspect or kill it)."""
        for slot in self.slots:
            if slot.label == device:
                return slot.handle
        raise JudgeUnavailable(f"this judge has no device {device!r}; it has {self.devices}")

    def versions(self) -> dict[str, str]:
        return next((slot.info.versions for slot in self.slots if slot.info.versions), {})

    def take_all(self) -> list[ActorSlot]:
        """Every slot, the roster left empty; no recovery goes on."""
        slots, self.slots = self.slots, []
        for slot in slots:
            if slot.recovery is not None:
                slot.recovery.cancel()
        return slots

    def leave(self, head: Head) -> None:
        """The cluster of ``head`` went away, and every actor with it."""
        self.gone = head
        for slot in self.slots:
            slot.state = "gone"
            if slot.recovery is not None:
                slot.recovery.cancel()

    async def pick(self, device: str | None, avoid: list[ActorSlot]) -> ActorSlot:
        if self.gone is not None:
            raise cluster_gone(self.gone)
        if not self.slots:
            raise JudgeUnavailable("the judge is not started (use `async with RayJudge(...)`)")
        matching = [slot for slot in self.slots if _matches(slot.label, device)]
        if not matching:
            raise JudgeUnavailable(
                f"this judge has no device {device!r}; it has {', '.join(self.devices)}"
            )
        live = [slot for slot in matching if slot.state != "gone"]
        if not live:
            await self.raise_if_cluster_gone()
            raise JudgeUnavailable(
                f"every judge actor for {device or 'this judge'} is gone (their nodes left the "
                "Ray cluster, or they died more often than ADAEXPLORE_RAY__MAX_RESTARTS); "
                "`ray status` shows the cluster; start the command again to place new ones"
            )
        # an actor that just failed this evaluation, or is coming back, only when no other is
        return min(live, key=lambda s: (s in avoid, s.state == "recovering", s.in_flight, s.served))

    async def lost(self, slot: ActorSlot, exc: Exception, lost: list[ActorSlot], what: str) -> None:
        """Books an actor lost mid-call; raises once ``what`` (the evaluation of a task, …)
        has been retried enough."""
        lost.append(slot)
        if slot.state == "ready":
            slot.state = "recovering"
            slot.recovery = asyncio.ensure_future(self._recover(slot))
        if len(lost) > self.settings.retries:
            await self.raise_if_cluster_gone(what)
            raise JudgeUnavailable(
                f"{what} lost its Ray actor on every attempt "
                f"({len(lost)}; last {slot.label}: {first_line(exc)}); the cluster is losing "
                "actors or nodes, `ray status` shows it. No verdict was recorded; evaluate again"
            ) from None
        log.warning("judge actor %s lost mid-evaluation (%s); retrying elsewhere", slot.label, exc)

    async def raise_if_cluster_gone(self, in_flight: str | None = None) -> None:
        """The actors are lost: if the head does not answer either, the cluster went away (a
        restart, the end of an allocation) and only starting it again helps."""
        gone = self.gone
        if gone is None and self.head is not None and not await self.head.answers():
            gone = self.head
        if gone is not None:
            raise cluster_gone(gone, in_flight) from None

    async def _recover(self, slot: ActorSlot) -> None:
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
