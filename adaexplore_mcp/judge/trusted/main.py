"""The trusted process of a job: it drives the user-code processes and writes the only report."""

from __future__ import annotations

import torch

from adaexplore_mcp.judge.trusted.link import Link
from adaexplore_mcp.judge.trusted.report import Reporter, TaskFailed
from adaexplore_mcp.judge.wire.frames import Channel
from adaexplore_mcp.judge.wire.jobs import ChildJob


def prepare(template: ChildJob) -> None:
    """What the process can do before its job comes: make its CUDA context."""
    if template.device != "cpu":
        torch.zeros(1, device=torch.device("cuda", 0))


def run(
    job: ChildJob,
    reporter: Reporter,
    *,
    candidate: Channel | None,
    task: Channel | None,
    calibrator: Channel | None,
) -> None:
    if job.kind == "probe":
        from adaexplore_mcp.judge.trusted.probe import probe

        reporter.report("probe", probe())
        return
    device = torch.device("cpu") if job.device == "cpu" else torch.device("cuda", 0)
    if device.type == "cuda":
        torch.zeros(1, device=device)  # the CUDA context is start-up, not compile time
    own: set[str] = set()
    links = {
        role: Link(role, channel, device, own) if channel is not None else None
        for role, channel in (("candidate", candidate), ("task", task), ("calibrator", calibrator))
    }
    try:
        if job.kind == "eval":
            from adaexplore_mcp.judge.trusted.evaluation import Evaluation

            evaluation = Evaluation(
                job,
                candidate=links["candidate"],
                task=links["task"],
                calibrator=links["calibrator"],
                reporter=reporter,
            )
            reporter.report("eval", evaluation.run())
        elif job.kind == "baseline":
            from adaexplore_mcp.judge.trusted.baseline import measure_baselines

            reporter.report(
                "baseline", measure_baselines(job, links["task"], links["calibrator"], reporter)
            )
        elif job.kind == "lint":
            from adaexplore_mcp.judge.trusted.lint import run_lint

            reporter.report("lint", run_lint(job, links["task"], reporter))
    except TaskFailed as failure:
        reporter.report("task_error", {"message": str(failure)})
    finally:
        for link in links.values():
            if link is not None:
                link.quit()
