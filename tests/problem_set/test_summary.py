"""The arithmetic of a problem set's summary."""

from __future__ import annotations

import math

import pytest

from adaexplore_mcp.judge import EvalResult, IntegrityFlag, Status
from adaexplore_mcp.problem_set import SetRecord, summarize


def record(
    kernel: str,
    status: Status,
    speedup: float | None = None,
    *,
    timed: bool = True,
    checks: tuple[str, ...] = (),
    precision: str = "strict",
) -> SetRecord:
    result = EvalResult(
        status=status,
        precision=precision,
        message=f"{kernel}: {status.value}",
        task="t",
        task_hash="th",
        kernel_hash=kernel,
        speedup_eager=speedup,
        timing_meaningful=timed,
        integrity=[IntegrityFlag(check=check, detail="") for check in checks],
    )
    return SetRecord(
        problem=f"{kernel}_problem.py",
        kernel=f"{kernel}.py",
        kernel_hash=kernel,
        task_hash="th",
        policies={"precision": precision},
        result=result,
    )


FIVE = [
    record("a", Status.CORRECT, 2.0),
    record("b", Status.CORRECT, 20.0),
    record("c", Status.CORRECT, 0.5),
    record("d", Status.INCORRECT),
    record("e", Status.REJECTED, checks=("no_triton_kernel", "no_triton_kernel")),
]


def test_verdicts_checks_fast_p_speedups_and_the_capped_mean():
    summary = summarize(FIVE, fast_p=(0.0, 1.0, 2.0))
    assert summary.kernels == 5 and summary.correct == 3 and summary.measured == 3
    assert summary.verdicts == {
        "correct": 3,
        "incorrect": 1,
        "compile_error": 0,
        "runtime_error": 0,
        "timeout": 0,
        "rejected": 1,
    }
    assert summary.integrity == {"no_triton_kernel": 1}  # kernels flagged, not flags
    # fast_p counts every kernel judged; 2.0 is not faster than 2x
    assert summary.fast_p == {"0": 0.6, "1": 0.4, "2": 0.2}
    assert summary.mean_speedup == pytest.approx(7.5)
    assert summary.geomean_speedup == pytest.approx(20 ** (1 / 3))
    # min(2, 10) + min(20, 10) + min(0.5, 10), and 0 for each of the two failures, over 5
    assert summary.capped_mean == pytest.approx(12.5 / 5)
    assert summary.timing == "measured" and summary.note is None
    assert summary.label == "precision strict"
    assert [row.kernel for row in summary.rows] == ["a.py", "b.py", "c.py", "d.py", "e.py"]


def test_a_correct_kernel_without_a_meaningful_timing_leaves_the_capped_mean_unknown():
    partial = summarize([*FIVE, record("f", Status.CORRECT, 3.0, timed=False)])
    assert partial.timing == "partial" and partial.measured == 3
    assert partial.capped_mean is None and "1 correct kernel(s)" in partial.note
    assert partial.fast_p["0"] == pytest.approx(4 / 6) and partial.fast_p["1"] == 2 / 6

    cpu = summarize([record("g", Status.CORRECT, None, timed=False), record("h", Status.TIMEOUT)])
    assert cpu.timing == "not_meaningful" and cpu.mean_speedup is None
    assert cpu.capped_mean is None and "CPU interpreter" in cpu.note

    failures_only = summarize([record("i", Status.INCORRECT)])
    assert failures_only.capped_mean == 0.0 and failures_only.timing == "measured"


def test_speedups_that_are_not_finite_or_not_positive_do_not_count():
    summary = summarize([record("a", Status.CORRECT, math.inf), record("b", Status.CORRECT, 4.0)])
    assert summary.measured == 1 and summary.mean_speedup == 4.0


def test_legacy_is_named_and_policies_never_mix():
    legacy = summarize([record("a", Status.CORRECT, 2.0, precision="legacy")])
    assert legacy.label == "precision legacy" and "LEGACY" in legacy.note
    with pytest.raises(ValueError, match="different policies"):
        summarize(
            [record("a", Status.CORRECT, 2.0), record("b", Status.CORRECT, 2.0, precision="tf32")]
        )


def test_an_empty_set():
    summary = summarize([])
    assert summary.kernels == 0 and summary.capped_mean is None and summary.fast_p["0"] == 0.0


def test_a_correct_kernels_row_carries_its_triton_share():
    from adaexplore_mcp.judge.measurement import WorkSplit

    mixed = record("m", Status.CORRECT, 1.1)
    mixed.result.work_split = WorkSplit(
        measured_on="gpu", triton_ms=0.01, library_ms=0.09, library_ops={"mm": 1}
    )
    (row,) = summarize([mixed]).rows
    assert row.triton_share == pytest.approx(0.1)
    (unsplit,) = summarize([record("n", Status.CORRECT, 1.1)]).rows
    assert unsplit.triton_share is None
