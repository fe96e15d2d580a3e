"""The trusted process of a job: it drives the user-code processes and writes the only report."""

from __future__ import annotations

import contextlib

import torch

from adaexplore_mcp.judge.trusted.common import gpu_lock
from adaexplore_mcp.judge.trusted.link import Link
from adaexplore_mcp.judge.trusted.report import Reporter, TaskFailed
from adaexplore_mcp.judge.wire.frames import Channel, ChannelClosed, FrameError
from adaexplore_mcp.judge.wire.jobs import ChildJob, PrepareDevice, prepared_adapter

PREPARE_PATIENCE_S = 120.0


def prepare(template: ChildJob, channels: dict[str, Channel]) -> None:
    """What a set of processes does before its job comes: each makes its CUDA context, while
    this process holds the GPU lock shared, so that no context is made while another
    evaluation times (making one stalls the GPU for every process: with four workers on an
    H200, timings held the lock 1.19 s on average while spare sets made their contexts without
    it, 0.68 s with no spare sets). A process that does not answer is found lost once the job
    runs."""
    shared, _ = gpu_lock(template)
    with shared():
        if template.device != "cpu":
            torch.zeros(1, device=torch.device("cuda", 0))
        asked = []
        for channel in channels.values():
            with contextlib.suppress(ChannelClosed):
                channel.send(PrepareDevice())
                asked.append(channel)
        for channel in asked:
            with contextlib.suppress(ChannelClosed, FrameError):
                channel.receive(prepared_adapter, timeout_s=PREPARE_PATIENCE_S)


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
