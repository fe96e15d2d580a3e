"""``drive --judge ray`` across a Ray cluster restart: the cluster goes away mid-run with an
evaluation in flight, a new cluster is started, and ``drive --resume`` finishes the run with no
step lost, none judged or recorded twice, and nothing recorded of the evaluation the cluster took
away with it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from adaexplore_mcp.config import database_path
from adaexplore_mcp.rundir import read_events, step_dir
from adaexplore_mcp.search_engine.steps import normalized_kernel
from tests.llm.conftest import KEYS
from tests.llm.fake_providers import Reply
from tests.ray_cluster import LocalRayCluster

from .conftest import GELU, ScriptedModel, cli, cli_environment, fenced

pytest.importorskip("ray", reason="the Ray judge's tests need Ray: pip install '.[ray]'")

STEPS = 4
# distinct kernels (a node per kernel: the search judges a kernel it already holds only once)
VARIANTS = [f"{GELU.rstrip()}\n# variant {n}\n" for n in range(1, STEPS + 1)]
# judged for long enough that the cluster is taken away while it is
SLOW_MARK = "time.sleep(40)"
SLOW = f"import time\n{SLOW_MARK}\n{GELU.rstrip()}\n"


def written(model: ScriptedModel, kernel: str) -> bool:
    """Whether the scripted model has answered with ``kernel`` (it was queued)."""
    with model.lock:
        return kernel not in model.kernels["gelu"]


def judged(home: Path) -> list[tuple[int, str, str]]:
    """(id, status, code) of every node the store holds but the roots: one per evaluation."""
    with sqlite3.connect(database_path(home)) as db:
        return db.execute(
            "SELECT id, status, code FROM search_nodes WHERE action != 'root' ORDER BY id"
        ).fetchall()


def failures_of(home: Path, marker: str) -> int:
    """The failures filed in the rule memory for a kernel that holds ``marker``."""
    with sqlite3.connect(database_path(home)) as db:
        query = "SELECT count(*) FROM failures WHERE instr(code, ?) > 0"
        return db.execute(query, (marker,)).fetchone()[0]


def test_drive_resumes_on_a_new_cluster_after_the_old_one_went_away(tmp_path, model, fake_server):
    home, run_dir = tmp_path / "home", tmp_path / "run"
    model.queue_kernels("gelu", VARIANTS[0], VARIANTS[1], SLOW, *VARIANTS[2:])
    settings = {
        "OPENAI_API_KEY": KEYS["openai"],
        "ADAEXPLORE_RAY__ACTORS": "2",
        "ADAEXPLORE_RAY__NODE_HOME": str(tmp_path / "nodes"),
        "ADAEXPLORE_JUDGE__WORKERS_PER_DEVICE": "1",
    }
    args = [
        "drive", "--task", "gelu", "--strategy", "best-of-n", "--steps", str(STEPS),
        "--provider", "openai", "--model", "gpt-4o", "--base-url", fake_server.openai_url,
        "--judge", "ray", "--device", "cpu", "--run-dir", str(run_dir), "--quiet",
    ]  # fmt: skip
    with LocalRayCluster(cpus=3) as first:
        # the model has written the slow kernel: the driver sends it to the judge at once, and
        # the judge is still on it seconds later
        returncode, stderr = _drive_then_kill(
            args,
            cli_environment(home, settings | first.environment),
            first,
            ready=lambda: written(model, SLOW),
            what="step 3",
            settle_s=3,
        )
    assert returncode == 3, stderr
    said = " ".join(stderr.split())  # the message as one line, whatever the terminal's width
    assert "the Ray cluster went away" in said and "Start the cluster again" in said, said
    assert f"adaexplore-mcp drive --resume --run-dir {run_dir}" in said
    assert [(r.step, r.outcome) for r in read_events(run_dir)] == [(1, "correct"), (2, "correct")]
    cut = step_dir(run_dir, "gelu", 3)
    assert not (cut / "step.json").exists() and not (cut / "verdict.json").exists()
    # the slow kernel's evaluation died with the cluster: no node, no failure blamed on it
    assert [code for _, _, code in judged(home)] == [normalized_kernel(v) for v in VARIANTS[:2]]
    assert failures_of(home, SLOW_MARK) == 0

    with LocalRayCluster(cpus=3) as second:
        env = cli_environment(home, settings | second.environment)
        resumed = cli(
            "drive", "--resume", "--run-dir", str(run_dir), "--judge", "ray", "--device", "cpu",
            "--quiet", env=env,
        )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    records = read_events(run_dir)
    assert [r.step for r in records] == [1, 2, 3, 4]
    assert {r.outcome for r in records} == {"correct"}
    stored = judged(home)
    assert [r.node_id for r in records] == [node_id for node_id, _, _ in stored]
    assert [code for _, _, code in stored] == [normalized_kernel(v) for v in VARIANTS]
    assert failures_of(home, SLOW_MARK) == 0 and failures_of(home, "# variant") == 0


def test_a_run_waiting_on_its_model_when_the_cluster_goes_away_stops_with_that_error(
    tmp_path, model, fake_server
):
    """Ray ends a process that is without its cluster's head for a while (shortened here to
    8 s): the judge leaves the cluster first, so a run waiting on a slow model when the cluster
    goes away ends with the cluster's error and its finished steps, not killed by Ray."""
    home, run_dir = tmp_path / "home", tmp_path / "run"
    model.queue("writer", fenced(VARIANTS[0]), Reply(text=fenced(VARIANTS[1]), delay_s=20))
    settings = {
        "OPENAI_API_KEY": KEYS["openai"],
        "ADAEXPLORE_RAY__ACTORS": "1",
        "ADAEXPLORE_RAY__HEAD_CHECK_S": "1",
        "ADAEXPLORE_RAY__NODE_HOME": str(tmp_path / "nodes"),
        "ADAEXPLORE_JUDGE__WORKERS_PER_DEVICE": "1",
        "RAY_gcs_rpc_server_reconnect_timeout_s": "8",
    }
    args = [
        "drive", "--task", "gelu", "--strategy", "best-of-n", "--steps", "2",
        "--provider", "openai", "--model", "gpt-4o", "--base-url", fake_server.openai_url,
        "--judge", "ray", "--device", "cpu", "--run-dir", str(run_dir), "--quiet",
    ]  # fmt: skip
    with LocalRayCluster(cpus=2) as cluster:
        returncode, stderr = _drive_then_kill(
            args,
            cli_environment(home, settings | cluster.environment),
            cluster,
            ready=lambda: sum(role == "writer" for role, _ in model.calls) >= 2,  # step 2 waits
            what="step 2",
        )
    assert returncode == 3, stderr
    said = " ".join(stderr.split())
    assert "the Ray cluster went away" in said and "Start the cluster again" in said, said
    assert [(r.step, r.outcome) for r in read_events(run_dir)] == [(1, "correct")]
    assert [code for _, _, code in judged(home)] == [normalized_kernel(VARIANTS[0])]


def _drive_then_kill(
    args: list[str],
    env: dict[str, str],
    cluster: LocalRayCluster,
    *,
    ready: Callable[[], bool],
    what: str,
    settle_s: float = 0.0,
) -> tuple[int, str]:
    """Run ``adaexplore-mcp ARGS`` until ``ready()``, kill the cluster ``settle_s`` later, and
    return how the command ended: its exit status and what it wrote to stderr."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "adaexplore_mcp.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not ready():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() - started < 120, f"the run never reached {what}"
            time.sleep(0.1)
        time.sleep(settle_s)
        cluster.kill()
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, stderr
