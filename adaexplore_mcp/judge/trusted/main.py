"""One job in the trusted process: it drives the user-code processes and writes the only
report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adaexplore_mcp.judge.trusted.link import Link
from adaexplore_mcp.judge.trusted.report import Reporter, TaskFailed
from adaexplore_mcp.judge.wire.jobs import ChildJob

if TYPE_CHECKING:
    from adaexplore_mcp.judge.trusted.peaks import PeakFlops


def run(
    job: ChildJob,
    reporter: Reporter,
    links: dict[str, Link],
    peaks: PeakFlops | None = None,
) -> None:
    """Run ``job`` against ``links`` (by role: candidate, task, calibrator) and report. Each
    link is told to quit at the end, whatever happened. ``peaks``: the GPU's matmul peaks, kept
    by a process that runs many jobs."""
    try:
        if job.kind == "probe":
            from adaexplore_mcp.judge.trusted.probe import probe

            reporter.report("probe", probe())
        elif job.kind == "eval":
            from adaexplore_mcp.judge.trusted.evaluation import TrustedEvaluation

            evaluation = TrustedEvaluation(
                job,
                candidate=links["candidate"],
                task=links["task"],
                calibrator=links.get("calibrator"),
                reporter=reporter,
                peaks=peaks,
            )
            reporter.report("eval", evaluation.run())
        elif job.kind == "baseline":
            from adaexplore_mcp.judge.trusted.baseline import measure_baselines

            reporter.report(
                "baseline",
                measure_baselines(job, links.get("task"), links.get("calibrator"), reporter),
            )
        elif job.kind == "lint":
            from adaexplore_mcp.judge.trusted.lint import run_lint

            reporter.report("lint", run_lint(job, links["task"], reporter))
    except TaskFailed as failure:
        reporter.report("task_error", {"message": str(failure)})
    finally:
        for link in links.values():
            link.quit()
