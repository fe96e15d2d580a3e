"""The judge on a local Ray cluster of CPU workers (Triton's interpreter): verdicts, routing
over actors, an actor killed mid-evaluation, a cluster without a free GPU, ``--judge ray``."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from adaexplore_mcp.app import open_app
from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge import JudgeUnavailable, Phase, Status
from adaexplore_mcp.judge.cluster import RayJudge
from adaexplore_mcp.judge.settings import RaySettings
from adaexplore_mcp.mcp_server.workbench import Workbench

from ..conftest import cpu_settings, run_cli
from ..ray_cluster import LocalRayCluster
from .servers import GELU, gelu_solution, gelu_wrong

ray = pytest.importorskip("ray", reason="the Ray judge's tests need Ray: pip install '.[ray]'")

ACTORS = 2


@pytest.fixture(scope="module")
def cluster():
    """A local cluster: 4 logical CPUs (two actors here, one for the CLI's own judge, one spare
    for a restarted actor) and one GPU that exists only in Ray's books, to fill it."""
    ray.init(num_cpus=4, num_gpus=1, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def ray_judge(cluster, loop_thread, tmp_path_factory):
    judge = RayJudge(
        "ray",
        cpu_settings(workers_per_device=1),
        RaySettings(actors=ACTORS, node_home=str(tmp_path_factory.mktemp("nodes"))),
    )
    loop_thread.run(judge.start())
    yield judge
    loop_thread.run(judge.close())


def served(judge: RayJudge) -> dict[str, int]:
    return {lane.device: lane.served for lane in judge.lanes_status()}


def test_verdicts_through_actors_with_their_phases(ray_judge, loop_thread):
    assert ray_judge.devices == ["cpu:0", "cpu:1"]
    assert ray_judge.versions()["torch"]
    phases: list[Phase] = []
    right = loop_thread.run(
        ray_judge.evaluate(GELU, gelu_solution(), on_progress=lambda p, _: phases.append(p))
    )
    assert right.status is Status.CORRECT, right.message
    assert Phase.COMPILING in phases or Phase.CHECKING in phases
    wrong = loop_thread.run(ray_judge.evaluate(GELU, gelu_wrong(), device="cpu:1"))
    assert wrong.status is Status.INCORRECT, wrong.message


def test_concurrent_evaluations_spread_over_the_actors(ray_judge, loop_thread):
    before = served(ray_judge)

    async def four():
        return await asyncio.gather(*(ray_judge.evaluate(GELU, gelu_solution()) for _ in range(4)))

    results = loop_thread.run(four())
    assert [r.status for r in results] == [Status.CORRECT] * 4
    after = served(ray_judge)
    assert {device: after[device] - before[device] for device in after} == {
        "cpu:0": 2,
        "cpu:1": 2,
    }


def test_an_actor_killed_mid_evaluation_costs_a_retry_and_one_recorded_verdict(
    ray_judge, loop_thread, tmp_path
):
    bench = Workbench(open_app(Settings(home=tmp_path), judge=ray_judge))
    search = bench.searches.start_search("gelu")
    killed: list[str] = []

    def kill_once(phase: Phase, _: float) -> None:
        # the evaluation is on an actor now; kill that actor as a lost node would
        if phase is not Phase.QUEUED and not killed:
            (busy,) = [lane.device for lane in ray_judge.lanes_status() if lane.running]
            killed.append(busy)
            ray.kill(ray_judge.actor(busy), no_restart=False)

    step = loop_thread.run(
        bench.searches.regenerate(search.id, gelu_solution(), on_progress=kill_once)
    )
    assert killed, "the evaluation never reached an actor"
    assert step.node.status is Status.CORRECT, step.node
    tree = bench.searches.get_tree(search.id)
    judged = [node for node in tree.nodes if node.action == "large"]
    assert len(judged) == 1 and judged[0].status is Status.CORRECT
    # Ray restarted the actor; its pool warm again, it judges what is sent to it
    assert killed[0] in ray_judge.devices
    again = loop_thread.run(ray_judge.evaluate(GELU, gelu_solution(), device=killed[0]))
    assert again.status is Status.CORRECT


def test_an_evaluation_out_of_actors_is_no_verdict_and_a_dead_actor_is_given_up(
    cluster, loop_thread, tmp_path
):
    judge = RayJudge(
        "ray",
        cpu_settings(workers_per_device=1),
        RaySettings(actors=1, retries=0, max_restarts=0, node_home=str(tmp_path)),
    )
    loop_thread.run(judge.start())
    try:

        def kill_for_good(phase: Phase, _: float) -> None:
            if phase is not Phase.QUEUED:
                ray.kill(judge.actor("cpu:0"), no_restart=True)

        with pytest.raises(
            JudgeUnavailable, match=r"lost its Ray actor on every attempt \(1;.*No verdict"
        ):
            loop_thread.run(judge.evaluate(GELU, gelu_solution(), on_progress=kill_for_good))
        with pytest.raises(JudgeUnavailable, match=r"every judge actor .* is gone"):
            for _ in range(3):  # until the judge has seen that Ray will not bring it back
                with contextlib.suppress(JudgeUnavailable):
                    loop_thread.run(judge.evaluate(GELU, gelu_solution()))
                loop_thread.run(asyncio.sleep(1))
            loop_thread.run(judge.evaluate(GELU, gelu_solution()))
        assert judge.devices == []
    finally:
        loop_thread.run(judge.close())


def test_a_cluster_whose_gpu_is_taken_says_so(ray_judge, loop_thread):
    holder = ray.remote(num_gpus=1, num_cpus=0)(_Holder).remote()
    ray.get(holder.ready.remote())
    try:
        judge = RayJudge("ray", cpu_settings(device="cuda"), RaySettings(placement_wait_s=1))
        with pytest.raises(JudgeUnavailable, match="no GPU of the Ray cluster is free"):
            loop_thread.run(judge.start())
    finally:
        ray.kill(holder)


def test_cli_eval_with_judge_ray(cluster, tmp_path):
    kernel = tmp_path / "kernel.py"
    kernel.write_text(gelu_solution())
    done = run_cli(
        "eval",
        "gelu",
        str(kernel),
        "--judge",
        "ray",
        "--device",
        "cpu",
        "--json",
        home=tmp_path / "home",
        env={
            "RAY_ADDRESS": cluster,
            "ADAEXPLORE_RAY__ACTORS": "1",
            "ADAEXPLORE_JUDGE__WORKERS_PER_DEVICE": "1",
        },
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "correct"


def test_cli_on_a_cluster_without_a_gpu_says_so_at_once(tmp_path):
    """Actors that need a GPU on a cluster none of whose nodes has one: an error naming the
    missing GPU and the way out, not actors pending until the start timeout."""
    kernel = tmp_path / "kernel.py"
    kernel.write_text(gelu_solution())
    # actors left pending would wait far longer than the command is given here
    pending_forever = {"ADAEXPLORE_RAY__START_TIMEOUT_S": "600"}
    with LocalRayCluster(cpus=2) as cpu_only:
        done = run_cli(
            "eval", "gelu", str(kernel), "--judge", "ray", "--device", "cuda",
            home=tmp_path / "home", env=cpu_only.environment | pending_forever, timeout=120,
        )  # fmt: skip
    assert done.returncode == 3, done.stderr
    said = " ".join(done.stderr.split())
    assert "the Ray cluster has no GPU (2 CPUs); add GPU nodes" in said, said
    assert "--device cpu" in said


class _Holder:
    def ready(self) -> bool:
        return True
