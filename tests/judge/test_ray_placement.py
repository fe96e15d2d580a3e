"""Where the Ray judge's actors go, decided before Ray is asked (no Ray needed), and what
``--judge ray`` says on a machine without Ray."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from types import ModuleType

import pytest

from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge import JudgeUnavailable, open_judge
from adaexplore_mcp.judge.cluster import RayJudge
from adaexplore_mcp.judge.cluster.placement import (
    CPU_ACTORS_DEFAULT,
    ActorPlan,
    ClusterLacks,
    plan_actors,
)
from adaexplore_mcp.judge.settings import JudgeSettings, RaySettings, is_ray_address
from adaexplore_mcp.store import Store

GPU_NODE = {"CPU": 16.0, "GPU": 2.0}


def test_one_actor_per_free_gpu():
    plan = plan_actors("auto", RaySettings(), cluster=GPU_NODE, free={"CPU": 16, "GPU": 2})
    assert plan == ActorPlan(gpu=True, count=2)


def test_cpu_actors_on_a_cluster_without_gpus_or_when_asked():
    cpu_only = {"CPU": 4.0}
    assert plan_actors("auto", RaySettings(), cluster=cpu_only, free=cpu_only) == ActorPlan(
        gpu=False, count=CPU_ACTORS_DEFAULT
    )
    plan = plan_actors("cpu", RaySettings(actors=3), cluster=GPU_NODE, free=GPU_NODE)
    assert plan == ActorPlan(gpu=False, count=3)


def test_a_cluster_without_a_gpu_says_so():
    with pytest.raises(ClusterLacks, match=r"has no GPU \(4 CPUs\).*--device cpu"):
        plan_actors("cuda", RaySettings(), cluster={"CPU": 4.0}, free={"CPU": 4.0})


class _JoinedCluster(ModuleType):
    """Stands in for ``ray`` joined to a cluster with these resources; counts the looks."""

    def __init__(self, cluster: dict[str, float], free: dict[str, float]) -> None:
        super().__init__("ray")
        self.looks = 0
        self._cluster, self._free = cluster, free

    def is_initialized(self) -> bool:
        return True

    def cluster_resources(self) -> dict[str, float]:
        self.looks += 1
        return self._cluster

    def available_resources(self) -> dict[str, float]:
        return self._free


def test_a_cluster_without_a_gpu_is_refused_at_once_one_whose_gpus_are_busy_after_a_wait(
    monkeypatch,
):
    settings = RaySettings(placement_wait_s=1.5)
    no_gpu = _JoinedCluster({"CPU": 4.0}, {"CPU": 4.0})
    monkeypatch.setitem(sys.modules, "ray", no_gpu)
    with pytest.raises(ClusterLacks, match="has no GPU"):
        asyncio.run(RayJudge("ray", JudgeSettings(device="cuda"), settings).start())
    assert no_gpu.looks == 1  # waiting cannot give the cluster a GPU
    busy = _JoinedCluster(GPU_NODE, {"CPU": 16.0})
    monkeypatch.setitem(sys.modules, "ray", busy)
    with pytest.raises(JudgeUnavailable, match="no GPU of the Ray cluster is free"):
        asyncio.run(RayJudge("ray", JudgeSettings(device="cuda"), settings).start())
    assert busy.looks > 1  # a GPU held by an actor just killed comes back: it looked again


def test_a_cluster_whose_gpus_are_all_taken_says_so():
    with pytest.raises(JudgeUnavailable, match="no GPU of the Ray cluster is free: all 2"):
        plan_actors("auto", RaySettings(), cluster=GPU_NODE, free={"CPU": 16.0})


def test_more_actors_than_free_gpus_or_cpus_is_refused():
    with pytest.raises(ClusterLacks, match="3 judge actors need 3 GPUs but only 2"):
        plan_actors("cuda", RaySettings(actors=3), cluster=GPU_NODE, free=GPU_NODE)
    with pytest.raises(JudgeUnavailable, match="reserve 4 CPUs but the Ray cluster has 1 free"):
        plan_actors(
            "cuda", RaySettings(cpus_per_actor=2), cluster=GPU_NODE, free={"CPU": 1, "GPU": 2}
        )


def test_ray_addresses_pick_the_ray_judge(tmp_path):
    assert is_ray_address("ray") and is_ray_address("ray://head:10001")
    assert not is_ray_address("http://gpu-box:8765") and not is_ray_address(None)
    assert not is_ray_address("rayleigh:8765")
    settings = Settings(home=tmp_path, remote={"url": "ray://head:10001"})
    judge = open_judge(settings, open_store=lambda: Store(settings.database_path))
    assert isinstance(judge, RayJudge) and judge.address == "ray://head:10001"


def test_without_ray_installed_the_judge_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    judge = RayJudge("ray", JudgeSettings(device="cpu"), RaySettings())
    with pytest.raises(JudgeUnavailable, match=r"pip install 'adaexplore-mcp\[ray\]'"):
        asyncio.run(judge.start())


def test_importing_the_judge_and_the_cli_does_not_import_ray():
    code = (
        "import sys, adaexplore_mcp.judge, adaexplore_mcp.judge.cluster, adaexplore_mcp.cli\n"
        "print(sorted(m for m in ('ray', 'torch') if m in sys.modules))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "[]"
