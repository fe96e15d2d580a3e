"""Run statistics against hand-computed values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.report import (
    Bootstrap,
    RunDirError,
    bootstrap_interval,
    geomean,
    load_run,
    run_stats,
)
from tests.conftest import run_cli
from tests.report.conftest import StepSpec, TaskSpec, make_run

FAST = Bootstrap(resamples=2000, seed=1)


def test_rates_count_incorrect_and_missing_tasks(five_task_run: Path) -> None:
    stats = run_stats([load_run(five_task_run)], FAST)
    assert stats.tasks_total == 5
    assert stats.correct == 3
    assert stats.correctness.value == pytest.approx(0.6)
    assert stats.incorrect_tasks == ["d"]
    assert stats.missing_tasks == ["e"]
    assert stats.timing == "measured"
    assert stats.note is None
    eager = stats.eager
    assert eager is not None
    # fast_p over all 5 tasks; speedups 2.0, 0.5, 1.5; "faster than p" is strict
    assert {k: v.value for k, v in eager.fast_p.items()} == pytest.approx(
        {"0": 0.6, "1": 0.4, "1.2": 0.4, "2": 0.0}
    )
    assert eager.n == 3
    assert eager.mean.value == pytest.approx(4 / 3)
    assert eager.median.value == pytest.approx(1.5)
    assert eager.geomean.value == pytest.approx(1.5 ** (1 / 3))
    compiled = stats.compile
    assert compiled is not None
    # speedups over torch.compile: 1.0, 0.25, 3.0
    assert compiled.mean.value == pytest.approx(4.25 / 3)
    assert compiled.median.value == pytest.approx(1.0)
    assert compiled.geomean.value == pytest.approx(0.75 ** (1 / 3))
    assert {k: v.value for k, v in compiled.fast_p.items()} == pytest.approx(
        {"0": 0.6, "1": 0.2, "1.2": 0.2, "2": 0.2}
    )


def test_intervals_contain_the_estimate_and_stay_within_the_data(five_task_run: Path) -> None:
    stats = run_stats([load_run(five_task_run)], FAST)
    assert stats.eager is not None
    estimates = [stats.correctness, stats.eager.mean, stats.eager.median, stats.eager.geomean]
    estimates += [e for e in stats.eager.fast_p.values() if e.value]
    for estimate in estimates:
        assert estimate.ci is not None
        assert estimate.ci.low <= estimate.value <= estimate.ci.high
    assert stats.eager.mean.ci.low >= 0.5 and stats.eager.mean.ci.high <= 2.0
    assert stats.correctness.ci.low >= 0.0 and stats.correctness.ci.high <= 1.0
    # fast_2 is 0 on every resample
    assert stats.eager.fast_p["2"].ci.high == 0.0


def test_per_task_figures(five_task_run: Path) -> None:
    by_name = {t.task: t for t in run_stats([load_run(five_task_run)], FAST).tasks}
    assert by_name["b"].steps == 2 and by_name["b"].correct_steps == 1
    assert by_name["b"].step_correct_rate == 0.5
    assert by_name["b"].speedup_eager == 0.5 and by_name["b"].speedup_compile == 0.25
    assert by_name["d"].status == "incorrect" and by_name["d"].speedup_eager is None
    assert by_name["e"].status == "missing" and by_name["e"].steps == 0
    assert by_name["a"].step_speedup_eager.value == pytest.approx(2.0)


def test_bootstrap_is_seeded_and_matches_a_direct_computation() -> None:
    values = [0.5, 1.0, 2.0, 4.0, 8.0]
    settings = Bootstrap(resamples=500, seed=3)

    def gm(rows: np.ndarray) -> np.ndarray:
        return np.exp(np.log(rows).mean(axis=-1))

    first = bootstrap_interval(values, gm, settings, np.random.default_rng(3))
    again = bootstrap_interval(values, gm, settings, np.random.default_rng(3))
    assert first == again
    rows = np.random.default_rng(3).integers(0, 5, size=(500, 5))
    direct = np.quantile(gm(np.asarray(values)[rows]), [0.025, 0.975])
    assert (first.low, first.high) == pytest.approx(tuple(direct))
    assert bootstrap_interval([2.0], gm, settings, np.random.default_rng(0)) is None
    assert geomean(values) == pytest.approx(2.0)
    assert geomean([]) is None


def test_cpu_run_reports_correctness_only(tmp_path: Path) -> None:
    run = make_run(
        tmp_path / "cpu",
        [TaskSpec("a", True, timing=False), TaskSpec("b", False, timing=False)],
    )
    stats = run_stats([load_run(run)], FAST)
    assert stats.timing == "not_meaningful"
    assert stats.eager is None and stats.compile is None
    assert stats.correctness.value == 0.5
    assert "speedups are unavailable" in stats.note
    assert stats.unmeasured_tasks == ["a"]


def test_legacy_runs_are_labelled_and_policies_never_mix(tmp_path: Path) -> None:
    legacy = make_run(tmp_path / "legacy", [TaskSpec("a", True, 3.0, 3.0)], precision="legacy")
    strict = make_run(tmp_path / "strict", [TaskSpec("b", True, 1.0, 1.0)])
    stats = run_stats([load_run(legacy)], FAST)
    assert stats.legacy and stats.precision is Precision.LEGACY
    assert "LEGACY" in stats.note
    with pytest.raises(RunDirError, match="different precision policies"):
        run_stats([load_run(legacy), load_run(strict)], FAST)


def test_mixed_operator_runs_are_labelled_and_never_pool_with_triton_runs(tmp_path: Path) -> None:
    mixed = make_run(tmp_path / "mixed", [TaskSpec("a", True, 3.0, 3.0)], ops="mixed")
    triton_only = make_run(tmp_path / "triton", [TaskSpec("b", True, 1.0, 1.0)])
    stats = run_stats([load_run(mixed)], FAST)
    assert stats.ops is Ops.MIXED and "MIXED operator policy" in stats.note
    assert run_stats([load_run(triton_only)], FAST).ops is Ops.TRITON
    with pytest.raises(RunDirError, match="different operator policies"):
        run_stats([load_run(mixed), load_run(triton_only)], FAST)
    table = run_cli("stats", str(mixed), "--resamples", "500", home=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "ops: mixed" in table.stdout


def test_runs_of_one_policy_pool_but_not_the_same_task_twice(tmp_path: Path) -> None:
    first = make_run(tmp_path / "one", [TaskSpec("a", True, 2.0, 2.0)])
    second = make_run(tmp_path / "two", [TaskSpec("b", False)])
    stats = run_stats([load_run(first), load_run(second)], FAST)
    assert stats.tasks_total == 2 and stats.correctness.value == 0.5
    again = make_run(tmp_path / "three", [TaskSpec("a", True, 1.0, 1.0)])
    with pytest.raises(RunDirError, match="'a' is in both"):
        run_stats([load_run(first), load_run(again)], FAST)


def test_not_a_run_dir(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match=r"no run\.json"):
        load_run(tmp_path)
    with pytest.raises(RunDirError, match="not a directory"):
        load_run(tmp_path / "nowhere")


def test_a_cut_last_event_line_is_ignored(five_task_run: Path) -> None:
    with (five_task_run / "events.jsonl").open("a") as file:
        file.write('{"task": "a", "step": 2, "stra')
    assert run_stats([load_run(five_task_run)], FAST).tasks[0].steps == 1


def test_cli_json_and_table(five_task_run: Path, tmp_path: Path) -> None:
    done = run_cli("stats", str(five_task_run), "--json", "--resamples", "500", home=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["correct"] == 3 and data["missing_tasks"] == ["e"]
    assert math.isclose(data["eager"]["fast_p"]["1"]["value"], 0.4)
    table = run_cli("stats", str(five_task_run), "--resamples", "500", home=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "precision: strict" in table.stdout
    assert "no correct kernel: d" in table.stdout and "missing (no summary): e" in table.stdout
    assert "fast_1.2" in table.stdout
    bad = run_cli("stats", str(tmp_path / "nowhere"), home=tmp_path)
    assert bad.returncode == 2 and "not a directory" in " ".join(bad.stderr.split())


def test_steps_without_summary_still_count_tokens(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r", [TaskSpec("a", None, steps=[StepSpec("llm_error")])])
    stats = run_stats([load_run(run)], FAST)
    assert stats.missing_tasks == ["a"] and stats.input_tokens == 100
