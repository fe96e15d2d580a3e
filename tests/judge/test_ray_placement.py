"""Where the Ray judge's actors go, decided before Ray is asked (no Ray needed), and what
``--judge ray`` says on a machine without Ray."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from adaexplore_mcp.config import JudgeSettings, RaySettings, Settings, is_ray_address
from adaexplore_mcp.judge import JudgeUnavailable, open_judge
from adaexplore_mcp.judge.cluster import RayJudge
from adaexplore_mcp.judge.cluster.placement import CPU_ACTORS_DEFAULT, ActorPlan, plan_actors

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
    with pytest.raises(JudgeUnavailable, match=r"has no GPU \(4 CPUs\).*--device cpu"):
        plan_actors("cuda", RaySettings(), cluster={"CPU": 4.0}, free={"CPU": 4.0})


def test_a_cluster_whose_gpus_are_all_taken_says_so():
    with pytest.raises(JudgeUnavailable, match="no GPU of the Ray cluster is free: all 2"):
        plan_actors("auto", RaySettings(), cluster=GPU_NODE, free={"CPU": 16.0})


def test_more_actors_than_free_gpus_or_cpus_is_refused():
    with pytest.raises(JudgeUnavailable, match="3 judge actors need 3 GPUs but only 2"):
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
    judge = open_judge(settings)
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
