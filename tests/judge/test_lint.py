"""Task lint: bundled tasks are clean; tasks a lazy kernel could pass are flagged."""

import pytest

from adaexplore_mcp.tasks import bundled_tasks, parse_task

TEMPLATE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return {expression}


n = 4096


def get_inputs():
    return [torch.randn(n, 64)]


def get_init_inputs():
    return []


SMALL_SHAPES = {{"n": 128}}
ODD_SHAPES = [{{"n": 127}}]
"""


def _task(expression: str):
    return parse_task(TEMPLATE.format(expression=expression), name="linted")


@pytest.mark.parametrize("task", bundled_tasks(), ids=lambda t: t.name)
def test_bundled_tasks_pass_the_lint(cpu_judge, task):
    report = cpu_judge.lint(task)
    assert report.error is None, report.error
    assert report.findings == [], [f.model_dump() for f in report.findings]
    assert len(report.variants) >= 2


@pytest.mark.parametrize(
    ("expression", "checks"),
    [
        ("x.mean() * 1e-3", {"zeros", "constant"}),  # ~0: zeros pass
        ("x.sum(dim=0) * 0 + 3.0", {"constant", "input_independent"}),
        ("torch.sigmoid(x * 1e-7)", {"constant", "input_independent"}),  # all ~0.5
        ("x + torch.randn_like(x)", {"nondeterministic"}),
        ("x.add_(1)", {"mutates_inputs"}),
        ("x / 0.0", {"nonfinite"}),
        ("torch.softmax(x.repeat(1, 4).flatten() * 0.1, dim=0)", {"zeros"}),  # all < atol
    ],
)
def test_lazy_passable_tasks_are_flagged(cpu_judge, expression, checks):
    report = cpu_judge.lint(_task(expression))
    found = {f.check for f in report.findings}
    assert checks <= found, (expression, found)


def test_a_sound_task_is_not_flagged(cpu_judge):
    assert cpu_judge.lint(_task("torch.tanh(x) * 2")).ok


def test_a_reference_that_raises_is_reported(cpu_judge):
    report = cpu_judge.lint(_task("x @ x"))
    assert not report.ok
    assert "Model.forward" in report.error


def test_a_task_that_hangs_is_told_so_by_the_lint(loop_thread, tmp_path):
    """The lint of a task whose own code ran past the limit said only that the judge's lint
    job "ended with timeout (signal None, exit code None)" (a red team)."""
    from adaexplore_mcp.judge import LocalJudge

    from ..conftest import SyncJudge, cpu_settings

    settings = cpu_settings(workers_per_device=1, timeout_s=8)
    judge = SyncJudge(loop_thread, LocalJudge(settings, home=tmp_path / "home"))
    loop_thread.run(judge.judge.start())
    try:
        hanging = TEMPLATE.format(expression="x").replace(
            "    return [torch.randn(n, 64)]", "    while True:\n        pass"
        )
        report = judge.lint(parse_task(hanging, name="hangs"))
    finally:
        loop_thread.run(judge.judge.close())
    assert report.error is not None and "task 'hangs'" in report.error, report.error
    assert "the task's own code was running" in report.error, report.error
