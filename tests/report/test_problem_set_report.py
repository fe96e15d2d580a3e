"""The HTML report of a problem set's results file."""

from __future__ import annotations

from adaexplore_mcp.judge import Status
from adaexplore_mcp.problem_set import ResultsWriter
from adaexplore_mcp.report.problem_set import render_set_report, report_for_results
from tests.problem_set.test_summary import record


def test_a_section_per_policy_set_the_latest_verdict_per_kernel_and_everything_escaped(tmp_path):
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path)
    writer.append(record("a", Status.INCORRECT))
    writer.append(record("a", Status.CORRECT, 3.0))  # the same kernel judged again: this counts
    hostile = record("b", Status.REJECTED, checks=("torch_fallback",))
    hostile.result.message = "<script>alert(1)</script>"
    writer.append(hostile)
    writer.append(record("a", Status.CORRECT, 2.0, precision="legacy"))

    report = report_for_results(path)
    strict, legacy = report.sections
    assert (strict.label, strict.kernels, strict.correct) == ("precision strict", 2, 1)
    assert strict.integrity == {"torch_fallback": 1} and strict.capped_mean == 1.5
    assert (legacy.label, legacy.kernels) == ("precision legacy", 1)

    html = render_set_report(report)
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count('class="policy-set"') == 2
    assert html.count('class="banner legacy"') == 1
    assert "torch_fallback 1" in html and "fast_1.2" in html
