"""`adaexplore-mcp reeval RUN_DIR`: re-measure every task's best kernel on this GPU."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from adaexplore_mcp.cli.common import (
    EXIT_JUDGE,
    DeviceOption,
    JudgeTokenOption,
    JudgeUrlOption,
    err,
    fail,
    settings_with,
)
from adaexplore_mcp.cli.judging import request_device, with_judge
from adaexplore_mcp.cli.stats import print_stats
from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge import Judge
from adaexplore_mcp.judge.devices import nvidia_driver_present, parse_device_spec
from adaexplore_mcp.report import RunDirError, TaskReeval, load_run, reeval_run, run_stats

_NO_GPU = (
    "reeval re-times kernels on a GPU and this machine has none; run it on a GPU machine, point "
    "--judge at a judge service or a Ray cluster with one, or pass --device cpu to re-check "
    "correctness only"
)


def reeval_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory from `adaexplore-mcp drive`.")],
    repeats: Annotated[
        int, typer.Option(min=1, help="Evaluations of each best kernel; the median counts.")
    ] = 3,
    runs: Annotated[
        int, typer.Option(min=5, help="At least this many timed calls per evaluation.")
    ] = 100,
    max_runs: Annotated[
        int, typer.Option(min=5, help="At most this many timed calls per evaluation.")
    ] = 2000,
    target_ms: Annotated[
        float, typer.Option(min=1, help="Kernel time to accumulate per evaluation.")
    ] = 1000.0,
    trials: Annotated[
        int | None,
        typer.Option(min=1, max=100, help="Random input sets checked per evaluation."),
    ] = None,
    task: Annotated[
        list[str] | None, typer.Option("--task", help="Only this task (repeatable).")
    ] = None,
    device: DeviceOption = None,
    judge_url: JudgeUrlOption = None,
    judge_token: JudgeTokenOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object (ReevalReport).")
    ] = False,
) -> None:
    """Re-evaluate each task's best kernel with more timed runs under the run's policies,
    update summary.json (the old figures stay in reeval.json) and print the statistics."""
    try:
        run = load_run(run_dir)
    except RunDirError as exc:
        raise fail(str(exc)) from None
    settings = _settings(device, runs, max_runs, target_ms, trials, judge_url, judge_token)
    cpu_only = device is not None and parse_device_spec(device).kind == "cpu"
    if not settings.remote.url and not cpu_only and not _gpu_here(settings):
        raise fail(_NO_GPU, EXIT_JUDGE)
    if task:
        unknown = sorted(set(task) - {t.name for t in run.tasks})
        if unknown:
            raise fail(f"the run has no task {', '.join(unknown)}; `stats {run_dir}` lists them")

    async def work(judge: Judge) -> object:
        if not cpu_only and all(d.split(":")[0] == "cpu" for d in judge.devices):
            raise fail(_NO_GPU, EXIT_JUDGE)
        err.print(
            f"re-evaluating on {', '.join(judge.devices)} under {run.precision.value} precision, "
            f"{run.ops.value} ops"
        )
        return await reeval_run(
            run,
            judge,
            repeats=repeats,
            device=request_device(settings, device),
            tasks=task,
            on_task=_progress,
        )

    report = with_judge(settings, work)
    if as_json:
        sys.stdout.write(report.model_dump_json() + "\n")  # type: ignore[attr-defined]
        return
    print_stats(run_stats([load_run(run_dir)]))


def _settings(
    device: str | None,
    runs: int,
    max_runs: int,
    target_ms: float,
    trials: int | None,
    judge_url: str | None,
    judge_token: str | None,
) -> Settings:
    settings = settings_with(device=device, judge_url=judge_url, judge_token=judge_token)
    timing = settings.judge.timing.model_copy(
        update={
            "min_runs": runs,
            "max_runs": max(runs, max_runs),
            "target_ms": target_ms,
            # longer than a search step's timing: more spans of fresh, checked calls
            "max_spans": max(settings.judge.timing.max_spans, 32),
        }
    )
    update: dict[str, object] = {"timing": timing}
    if trials is not None:
        update["trials"] = trials
    return settings.model_copy(update={"judge": settings.judge.model_copy(update=update)})


def _gpu_here(settings: Settings) -> bool:
    spec = parse_device_spec(settings.judge.device)
    return spec.kind == "cuda" or (spec.kind == "auto" and nvidia_driver_present())


def _progress(result: TaskReeval) -> None:
    if result.outcome == "remeasured":
        previous = result.previous.speedup_eager if result.previous else None
        before = f"{previous:.3g}×" if previous is not None else "–"
        after = f"{result.speedup_eager:.3g}×" if result.speedup_eager is not None else "–"
        err.print(
            f"{result.task}: {result.runtime_ms:.4g} ms, {after} eager (was {before})",
            markup=False,
        )
    else:
        err.print(f"{result.task}: {result.outcome} ({result.reason})", markup=False)
