"""Planning, resuming and judging a set through a judge that answers at once."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from adaexplore_mcp.judge import EvalResult, JudgeError, JudgeUnavailable, Status
from adaexplore_mcp.judge.policy import Precision
from adaexplore_mcp.problem_set import (
    ResultsFileError,
    judge_set,
    match_set,
    open_results,
    plan_set,
    read_records,
)
from adaexplore_mcp.tasks import get_bundled_task

STRICT = {"precision": "strict"}


class AnsweringJudge:
    """Calls back ``verdict(task, code)``; counts the evaluations in flight."""

    def __init__(self, verdict) -> None:
        self.verdict = verdict
        self.in_flight = 0
        self.most_in_flight = 0
        self.calls: list[dict] = []

    @property
    def devices(self) -> list[str]:
        return ["cpu"]

    async def evaluate(self, task, code, **options):
        self.calls.append(options)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            return self.verdict(task, code, options)
        finally:
            self.in_flight -= 1


def correct(task, code, options) -> EvalResult:
    return EvalResult(
        status=Status.CORRECT,
        precision=options["precision"],
        message="ok",
        task=task.name,
        task_hash=task.hash,
        kernel_hash="x",
    )


def a_set(tmp_path: Path, kernels: int = 3) -> tuple[Path, Path]:
    problems, kernel_dir = tmp_path / "problems", tmp_path / "kernels"
    problems.mkdir()
    kernel_dir.mkdir()
    source = get_bundled_task("softmax").source
    for n in range(1, kernels + 1):
        (problems / f"{n}_Softmax.py").write_text(source)
        (kernel_dir / f"{n}.py").write_text(f"# kernel {n}\n")
    return problems, kernel_dir


def test_records_are_appended_as_verdicts_arrive_and_a_rerun_skips_them(tmp_path):
    problems, kernels = a_set(tmp_path)
    out = tmp_path / "results.jsonl"
    match = match_set(problems, kernels)
    plan = plan_set(match, problems, kernels, STRICT, read_records(out))
    assert len(plan.pending) == 3 and plan.done == []
    judge = AnsweringJudge(correct)
    with open_results(out) as writer:
        failed = asyncio.run(
            judge_set(
                judge,
                plan.pending,
                {"precision": Precision.STRICT},
                jobs=2,
                on_record=writer.append,
            )
        )
    assert failed == [] and judge.most_in_flight == 2
    assert all(call["precision"] is Precision.STRICT for call in judge.calls)
    records = read_records(out)
    assert sorted(r.kernel for r in records) == ["1.py", "2.py", "3.py"]
    assert {r.policies["precision"] for r in records} == {"strict"}

    # Same policies: nothing to do. An edited kernel, or another policy: judged again.
    assert plan_set(match, problems, kernels, STRICT, records).pending == []
    (kernels / "2.py").write_text("# kernel 2, edited\n")
    again = plan_set(match, problems, kernels, STRICT, records)
    assert [item.pair.kernel for item in again.pending] == ["2.py"] and len(again.done) == 2
    legacy = plan_set(match, problems, kernels, {"precision": "legacy"}, records)
    assert len(legacy.pending) == 3
    # A policy the records predate (an operator policy) is judged again, not assumed.
    assert len(plan_set(match, problems, kernels, STRICT | {"ops": "mixed"}, records).pending) == 3


def test_a_line_cut_by_a_crash_is_ignored_and_closed_off(tmp_path):
    problems, kernels = a_set(tmp_path, kernels=1)
    out = tmp_path / "results.jsonl"
    plan = plan_set(match_set(problems, kernels), problems, kernels, STRICT, [])
    with open_results(out) as writer:
        asyncio.run(
            judge_set(
                AnsweringJudge(correct), plan.pending, STRICT, jobs=1, on_record=writer.append
            )
        )
    whole = out.read_text()
    out.write_text(whole + whole[: len(whole) // 2])  # killed in the middle of a second line
    assert len(read_records(out)) == 1
    with open_results(out) as writer:
        writer.append(read_records(out)[0])
    assert len(read_records(out)) == 2


def test_a_second_run_on_the_same_results_file_is_refused(tmp_path):
    out = tmp_path / "results.jsonl"
    refused = pytest.raises(ResultsFileError, match="another run is writing")
    with open_results(out), refused, open_results(out):
        pass


def test_unusable_files_are_not_judged_and_say_why(tmp_path):
    problems, kernels = a_set(tmp_path, kernels=2)
    (problems / "1_Softmax.py").write_text("x = 1\n")
    os.chmod(kernels / "2.py", 0)
    plan = plan_set(match_set(problems, kernels), problems, kernels, STRICT, [])
    reasons = {entry.kernel: entry.reason for entry in plan.not_judged}
    assert "the problem file cannot be used" in reasons["1.py"]
    if os.geteuid() != 0:  # root reads any file
        assert "cannot read the kernel file" in reasons["2.py"]
    assert not any(entry.judge_failed for entry in plan.not_judged)


def test_once_the_judge_is_unavailable_no_further_kernel_is_started(tmp_path):
    problems, kernels = a_set(tmp_path, kernels=4)
    plan = plan_set(match_set(problems, kernels), problems, kernels, STRICT, [])

    def down(task, code, options):
        raise JudgeUnavailable("no worker could be started")

    judge = AnsweringJudge(down)
    failed = asyncio.run(judge_set(judge, plan.pending, STRICT, jobs=1, on_record=lambda r: None))
    assert len(judge.calls) == 1 and len(failed) == 4
    assert all(entry.judge_failed for entry in failed)
    assert sum("not started" in entry.reason for entry in failed) == 3

    def flaky(task, code, options):
        if "kernel 2" in code:
            raise JudgeError("the worker died")
        return correct(task, code, options)

    recorded = []
    failed = asyncio.run(
        judge_set(AnsweringJudge(flaky), plan.pending, STRICT, jobs=2, on_record=recorded.append)
    )
    assert [entry.kernel for entry in failed] == ["2.py"] and len(recorded) == 3
