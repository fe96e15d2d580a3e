"""How many judge actors to place on a Ray cluster, and of which kind: decided from the
cluster's resources before anything is placed, so that a cluster without a free GPU says so
instead of leaving actors pending forever."""

from __future__ import annotations

from dataclasses import dataclass

from adaexplore_mcp.judge.devices import parse_device_spec
from adaexplore_mcp.judge.exceptions import JudgeUnavailable
from adaexplore_mcp.judge.settings import RaySettings

CPU_ACTORS_DEFAULT = 2


class ClusterLacks(JudgeUnavailable):
    """The cluster does not have what the actors need at all (not merely held by others now):
    waiting for it to be freed cannot help, so the judge says so at once."""


@dataclass(frozen=True)
class ActorPlan:
    gpu: bool
    count: int


def plan_actors(
    device: str, settings: RaySettings, *, cluster: dict[str, float], free: dict[str, float]
) -> ActorPlan:
    """The actors to place for the judge's ``device`` ('cpu', 'cuda', 'cuda:N…' or 'auto'),
    given the cluster's total and free resources (``ray.cluster_resources()``,
    ``ray.available_resources()``). Raises ``JudgeUnavailable`` when they cannot be placed now,
    ``ClusterLacks`` when the cluster could not place them even with nothing else running."""
    spec = parse_device_spec(device)
    total_gpus = int(cluster.get("GPU", 0))
    free_gpus = int(free.get("GPU", 0))
    if spec.kind == "cpu" or (spec.kind == "auto" and total_gpus == 0):
        count = settings.actors or CPU_ACTORS_DEFAULT
        _check_cpus(count, settings, free)
        return ActorPlan(gpu=False, count=count)
    if total_gpus == 0:
        raise ClusterLacks(
            f"the Ray cluster has no GPU ({_described(cluster)}); add GPU nodes to it, or use "
            "--device cpu to judge correctness in Triton's CPU interpreter"
        )
    if free_gpus == 0:
        raise JudgeUnavailable(
            f"no GPU of the Ray cluster is free: all {total_gpus} are held by other actors or "
            "jobs (`ray status` shows which); wait for them to finish, or add GPU nodes"
        )
    count = settings.actors or free_gpus
    if count > free_gpus:
        kind = ClusterLacks if count > total_gpus else JudgeUnavailable
        raise kind(
            f"{count} judge actors need {count} GPUs but only {free_gpus} of the Ray cluster's "
            f"{total_gpus} are free; lower ADAEXPLORE_RAY__ACTORS or free some"
        )
    _check_cpus(count, settings, free)
    return ActorPlan(gpu=True, count=count)


def _check_cpus(count: int, settings: RaySettings, free: dict[str, float]) -> None:
    needed = count * settings.cpus_per_actor
    if needed > free.get("CPU", 0) + 1e-9:
        raise JudgeUnavailable(
            f"{count} judge actors reserve {needed:g} CPUs but the Ray cluster has "
            f"{free.get('CPU', 0):g} free; lower ADAEXPLORE_RAY__ACTORS or "
            "ADAEXPLORE_RAY__CPUS_PER_ACTOR, or add nodes"
        )


def _described(resources: dict[str, float]) -> str:
    cpus = resources.get("CPU", 0)
    return f"{cpus:g} CPUs" if cpus else "no CPU either"
