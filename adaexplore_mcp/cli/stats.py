"""`adaexplore-mcp stats RUN_DIR`: correctness, speedups and fast_p of a run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from adaexplore_mcp.cli.common import fail, out
from adaexplore_mcp.judge.policy import Ops
from adaexplore_mcp.report import (
    Bootstrap,
    Estimate,
    RunDirError,
    RunStats,
    SpeedupStats,
    load_run,
    run_stats,
)


def stats_command(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="A run directory (from `adaexplore-mcp drive`); several are pooled as one set "
            "of tasks when they share a precision policy."
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object (RunStats).")] = False,
    resamples: Annotated[
        int, typer.Option(min=100, help="Bootstrap resamples for the intervals.")
    ] = 10_000,
    confidence: Annotated[
        float, typer.Option(min=0.5, max=0.999, help="Confidence of the intervals.")
    ] = 0.95,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
) -> None:
    """Per task and overall: correctness, mean/median/geomean speedup over eager PyTorch and
    torch.compile, fast_p (p = 0, 1, 1.2, 2) with bootstrap confidence intervals."""
    try:
        runs = [load_run(path) for path in run_dirs]
        stats = run_stats(runs, Bootstrap(resamples=resamples, confidence=confidence, seed=seed))
    except RunDirError as exc:
        raise fail(str(exc)) from None
    if as_json:
        sys.stdout.write(stats.model_dump_json() + "\n")
        return
    print_stats(stats)


def print_stats(stats: RunStats) -> None:
    for run in stats.runs:
        out.print(
            f"[bold]{run.path}[/bold]  {run.strategy}, memory {run.memory}, {run.model}, "
            f"{run.steps} steps a task" + (" (replayed)" if run.replay else ""),
            markup=True,
        )
    policy = stats.precision.value
    if stats.legacy:
        out.print(f"[bold red]precision: {policy} — not comparable with strict runs[/bold red]")
    else:
        out.print(f"precision: {policy}")
    if stats.ops is Ops.MIXED:
        out.print("[bold red]ops: mixed — not comparable with triton-only runs[/bold red]")
    else:
        out.print(f"ops: {stats.ops.value}")
    if stats.devices:
        out.print("device: " + ", ".join(stats.devices), markup=False)
    out.print(_task_table(stats))
    level = round(stats.bootstrap.confidence * 100)
    out.print(
        f"\ncorrect: {stats.correct}/{stats.tasks_total} tasks = {_rate(stats.correctness)}"
        f"  [dim]({level}% bootstrap intervals over tasks, {stats.bootstrap.resamples} "
        "resamples)[/dim]"
    )
    if stats.incorrect_tasks:
        out.print("no correct kernel: " + ", ".join(stats.incorrect_tasks), markup=False)
    if stats.missing_tasks:
        out.print("missing (no summary): " + ", ".join(stats.missing_tasks), markup=False)
    if stats.eager is not None and stats.compile is not None:
        out.print(_speedup_table(stats.eager, stats.compile))
    if stats.note:
        out.print(f"[yellow]note:[/yellow] {stats.note}")
    cost = f", ${stats.cost_usd:.2f}" if stats.cost_usd is not None else ""
    out.print(f"[dim]tokens: {stats.input_tokens} in, {stats.output_tokens} out{cost}[/dim]")


def _task_table(stats: RunStats) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("task", "status", "steps", "correct steps", "× eager", "× compile", "ms"):
        table.add_column(column, justify="left" if column in ("task", "status") else "right")
    for task in stats.tasks:
        rate = f"{task.correct_steps}/{task.steps}" if task.steps else "–"
        status = task.status + (" (re-measured)" if task.remeasured else "")
        table.add_row(
            task.task,
            status,
            str(task.steps),
            rate,
            _num(task.speedup_eager),
            _num(task.speedup_compile),
            _num(task.best_runtime_ms, "{:.4g}"),
        )
    return table


def _speedup_table(eager: SpeedupStats, compiled: SpeedupStats) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("", "over eager", "over torch.compile"):
        table.add_column(column, justify="left" if not column else "right")
    table.add_row("tasks with a speedup", str(eager.n), str(compiled.n))
    for name in ("mean", "median", "geomean"):
        table.add_row(
            f"{name} speedup", _times(getattr(eager, name)), _times(getattr(compiled, name))
        )
    for key in eager.fast_p:
        table.add_row(f"fast_{key}", _rate(eager.fast_p[key]), _rate(compiled.fast_p[key]))
    return table


def _rate(estimate: Estimate) -> str:
    if estimate.value is None:
        return "–"
    text = f"{estimate.value:.0%}"
    if estimate.ci is not None:
        text += f" [{estimate.ci.low:.0%}, {estimate.ci.high:.0%}]"
    return text


def _times(estimate: Estimate) -> str:
    if estimate.value is None:
        return "–"
    text = f"{estimate.value:.3g}×"
    if estimate.ci is not None:
        text += f" [{estimate.ci.low:.3g}, {estimate.ci.high:.3g}]"
    return text


def _num(value: float | None, fmt: str = "{:.3g}") -> str:
    return "–" if value is None else fmt.format(value)
