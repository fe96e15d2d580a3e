"""Re-evaluation: summaries updated, old figures kept, flaky kernels no longer counted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from adaexplore_mcp.judge.policy import Ops
from adaexplore_mcp.report import REEVAL_FILE, history, load_run, reeval_run, run_stats
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task
from tests.conftest import run_cli
from tests.report.conftest import TaskSpec, make_run
from tests.search_engine.fakes import EAGER_MS, FakeJudge, kernel


def _run(tmp_path: Path) -> Path:
    return make_run(
        tmp_path / "run",
        [
            TaskSpec("fast", True, 3.0, 2.0, best_kernel=kernel(speed=2.5)),
            TaskSpec("flaky", True, 1.5, 1.5, best_kernel=kernel("# flaky", speed=1.5)),
            TaskSpec("lost", False),
        ],
    )


def test_reeval_updates_summaries_and_keeps_the_old_figures(tmp_path: Path) -> None:
    path = _run(tmp_path)
    judge = FakeJudge()
    report = asyncio.run(reeval_run(load_run(path), judge, repeats=3))
    outcomes = {t.task: t.outcome for t in report.tasks}
    assert outcomes == {"fast": "remeasured", "flaky": "failed", "lost": "skipped"}
    assert len(judge.evaluated) == 3 + 2  # the flaky kernel: stopped at its first failure
    run = load_run(path)
    fast = run.task("fast")
    assert fast.summary.remeasured and fast.summary.speedup_eager == 2.5
    assert fast.summary.best_runtime_ms == EAGER_MS / 2.5
    assert fast.summary.device_name == "fake"
    (entry,) = history(fast)
    assert entry.previous.speedup_eager == 3.0 and entry.samples_ms == [4.0, 4.0, 4.0]
    assert run.task("flaky").summary.correct is False
    assert history(run.task("flaky"))[0].verdicts[:2] == ["correct", "incorrect"]
    assert not (run.task("lost").directory / REEVAL_FILE).exists()
    stats = run_stats([run])
    assert stats.correct == 1 and stats.eager.geomean.value == 2.5
    # a second re-evaluation appends to the history
    asyncio.run(reeval_run(run, FakeJudge(), repeats=1, tasks=["fast"]))
    assert len(history(load_run(path).task("fast"))) == 2


def test_reeval_judges_under_the_runs_operator_policy(tmp_path: Path) -> None:
    path = make_run(
        tmp_path / "run", [TaskSpec("fast", True, 3.0, 2.0, best_kernel=kernel())], ops="mixed"
    )
    judge = FakeJudge()
    report = asyncio.run(reeval_run(load_run(path), judge, repeats=2))
    assert judge.ops == [Ops.MIXED, Ops.MIXED]
    assert report.ops is Ops.MIXED and report.tasks[0].ops is Ops.MIXED


def test_reeval_on_the_cpu_checks_correctness_only(tmp_path: Path) -> None:
    path = _run(tmp_path)
    report = asyncio.run(reeval_run(load_run(path), FakeJudge(timing=False), repeats=1))
    assert report.tasks[0].outcome == "checked"
    fast = load_run(path).task("fast")
    assert fast.summary.speedup_eager == 3.0 and not fast.summary.remeasured
    assert history(fast)[0].outcome == "checked"


def test_cli_refuses_without_a_gpu_and_checks_on_the_cpu(tmp_path: Path) -> None:
    task = get_bundled_task("softmax")
    path = make_run(
        tmp_path / "run",
        [
            TaskSpec(
                "softmax",
                True,
                2.0,
                2.0,
                source=task.source,
                best_kernel=bundled_solution(task.name),
            )
        ],
    )
    refused = run_cli("reeval", str(path), home=tmp_path / "home")
    assert refused.returncode == 3
    assert "--device cpu" in " ".join(refused.stderr.split())
    done = run_cli(
        "reeval", str(path), "--device", "cpu", "--repeats", "1", "--json", home=tmp_path / "home"
    )
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)["tasks"]
    assert result["outcome"] == "checked" and result["verdicts"] == ["correct"]
    assert result["precision"] == "strict"


def test_cli_refuses_more_trials_than_the_settings_allow(tmp_path: Path) -> None:
    """``--trials`` went into the settings by ``model_copy``, which validates nothing: a
    million passed the bound that ``ADAEXPLORE_JUDGE__TRIALS`` has."""
    path = make_run(tmp_path / "run", [TaskSpec("softmax", True, 2.0, 2.0)])
    refused = run_cli(
        "reeval", str(path), "--device", "cpu", "--trials", "101", home=tmp_path / "home"
    )
    assert refused.returncode == 2
    assert "--trials" in refused.stderr and "100" in refused.stderr
