"""`adaexplore-mcp eval PROBLEMS_DIR KERNELS_DIR`: judge a problem set in one command."""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, Field
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from adaexplore_mcp.cli.common import (
    EXIT_JUDGE,
    EXIT_USAGE,
    err,
    fail,
    out,
    settings_with,
)
from adaexplore_mcp.cli.judging import request_device, with_judge
from adaexplore_mcp.judge import Judge
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.problem_set import (
    DEFAULT_FAST_P,
    NotJudged,
    ResultsFileError,
    ResultsWriter,
    SetMatch,
    SetPlan,
    SetRecord,
    SetSummary,
    Unmatched,
    judge_capacity,
    judge_set,
    match_set,
    open_results,
    plan_set,
    read_records,
    summarize,
)

OutOption = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Problem sets: append a record per kernel to this JSONL file as each verdict "
        "arrives; a rerun skips the kernels it already holds under the same policies.",
    ),
]
FastPOption = Annotated[
    list[float] | None,
    typer.Option(
        "--fast-p",
        min=0,
        help="Problem sets: more speedup thresholds for fast_p (fast_0 and fast_1 always).",
    ),
]
JobsOption = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        min=1,
        max=4096,
        help="Problem sets: evaluations in flight. Default: every worker of the judge busy.",
    ),
]
_SHOWN = 20  # unmatched files listed by name; the rest are counted


class SetRunReport(BaseModel):
    """What `eval PROBLEMS_DIR KERNELS_DIR --json` prints."""

    summary: SetSummary
    results_file: str | None
    from_results_file: int = Field(description="Kernels whose verdict a previous run recorded.")
    unmatched_kernels: list[Unmatched]
    problems_without_kernel: list[str]
    not_judged: list[NotJudged]


def eval_set(
    problems_dir: Path,
    kernels_dir: Path,
    *,
    results: Path | None,
    fast_p: list[float] | None,
    jobs: int | None,
    as_json: bool,
    timeout: float | None,
    device: str | None,
    precision: Precision | None,
    ops: Ops | None,
    judge_url: str | None,
    judge_token: str | None,
) -> None:
    """Judge every kernel of KERNELS_DIR against its problem in PROBLEMS_DIR."""
    match = match_set(problems_dir, kernels_dir)
    _print_match(match)
    if not match.pairs:
        raise fail(
            f"no kernel in {kernels_dir} matches a problem in {problems_dir}: name a kernel "
            "after its problem (25_Conv2d_Min_Tanh_Tanh.py or 25.py for problem 25)"
        )
    settings = settings_with(device, timeout, judge_url, judge_token)
    # The options every evaluation is judged under; a rerun's skips are keyed on the same.
    options: dict[str, Any] = {
        "precision": Precision(precision or settings.judge.precision),
        "ops": Ops(ops or settings.judge.ops),
    }
    policies = {name: str(value) for name, value in options.items()}
    target = request_device(settings, device)

    with contextlib.ExitStack() as stack:
        writer = _open(stack, results)
        recorded = read_records(results) if results is not None else []
        plan = plan_set(match, problems_dir, kernels_dir, policies, recorded)
        if plan.done:
            err.print(
                f"{len(plan.done)} kernels already judged under these policies in {results}: "
                "skipped"
            )
        new: list[SetRecord] = []
        failed: list[NotJudged] = []
        if plan.pending:

            async def work(judge: Judge) -> list[NotJudged]:
                return await _judge(judge, plan, options, target, jobs, timeout, writer, new)

            failed = with_judge(settings, work)

    order = {pair.kernel: index for index, pair in enumerate(match.pairs)}
    records = sorted(plan.done + new, key=lambda record: order[record.kernel])
    summary = summarize(records, sorted({*DEFAULT_FAST_P, *(fast_p or [])}))
    report = SetRunReport(
        summary=summary,
        results_file=str(results) if results is not None else None,
        from_results_file=len(plan.done),
        unmatched_kernels=match.unmatched_kernels,
        problems_without_kernel=match.problems_without_kernel,
        not_judged=plan.not_judged + failed,
    )
    if as_json:
        sys.stdout.write(report.model_dump_json() + "\n")
    else:
        print_summary(summary)
    _exit_for(report.not_judged)


def _open(stack: contextlib.ExitStack, results: Path | None) -> ResultsWriter | None:
    if results is None:
        return None
    try:
        return stack.enter_context(open_results(results))
    except (ResultsFileError, OSError) as exc:
        raise fail(str(exc)) from None


async def _judge(
    judge: Judge,
    plan: SetPlan,
    options: dict[str, Any],
    device: str | None,
    jobs: int | None,
    timeout: float | None,
    writer: ResultsWriter | None,
    new: list[SetRecord],
) -> list[NotJudged]:
    in_flight = jobs or await judge_capacity(judge)
    counts: Counter[str] = Counter()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err, transient=False) as progress:
        bar = progress.add_task("judging", total=len(plan.pending))

        def advance(outcome: str) -> None:
            counts[outcome] += 1
            tally = " · ".join(f"{name} {n}" for name, n in sorted(counts.items()))
            progress.update(bar, advance=1, description=f"judging ({tally})")

        def record(entry: SetRecord) -> None:
            if writer is not None:
                writer.append(entry)
            new.append(entry)
            advance(entry.result.status.value)

        return await judge_set(
            judge,
            plan.pending,
            options,
            jobs=in_flight,
            device=device,
            timeout_s=timeout,
            on_record=record,
            on_not_judged=lambda _: advance("not judged"),
        )


def _print_match(match: SetMatch) -> None:
    err.print(
        f"{len(match.pairs)} kernels matched to problems"
        + (f", {len(match.unmatched_kernels)} unmatched" if match.unmatched_kernels else "")
        + (
            f"; {len(match.problems_without_kernel)} problems have no kernel"
            if match.problems_without_kernel
            else ""
        )
    )
    for entry in match.unmatched_kernels[:_SHOWN]:
        err.print(f"  unmatched: {entry.kernel}: {entry.reason}", markup=False)
    if len(match.unmatched_kernels) > _SHOWN:
        err.print(f"  … and {len(match.unmatched_kernels) - _SHOWN} more (--json lists them)")


_STYLE = {"correct": "green", "incorrect": "yellow", "rejected": "magenta"}


def print_summary(summary: SetSummary) -> None:
    table = Table(box=None, pad_edge=False)
    for column in ("status", "speedup", "triton", "kernel", "problem", "checks"):
        table.add_column(column, justify="right" if column in ("speedup", "triton") else "left")
    for row in summary.rows:
        style = _STYLE.get(row.status.value, "red")
        table.add_row(
            f"[{style}]{row.status.value}[/{style}]",
            f"{row.speedup_eager:.2f}x" if row.speedup_eager is not None else "",
            f"{row.triton_share:.0%}" if row.triton_share is not None else "",
            row.kernel,
            row.problem,
            ", ".join(row.checks),
        )
    out.print(table)
    out.print(f"[bold]{summary.kernels} kernels judged[/bold] · {summary.label}")
    verdicts = " · ".join(f"{name} {n}" for name, n in summary.verdicts.items() if n)
    out.print(f"verdicts: {verdicts or 'none'}")
    if summary.integrity:
        checks = " · ".join(f"{name} {n}" for name, n in summary.integrity.items())
        out.print(f"integrity checks: {checks}")
    out.print("fast_p: " + "  ".join(f"fast_{p} {v:.3f}" for p, v in summary.fast_p.items()))
    if summary.measured:
        out.print(
            f"speedup over eager, {summary.measured} correct kernels: mean "
            f"{summary.mean_speedup:.3f}x · geomean {summary.geomean_speedup:.3f}x"
        )
    if summary.capped_mean is not None:
        out.print(
            f"AdaExplore's capped mean (speedups capped at {summary.cap:g}, failures 0): "
            f"{summary.capped_mean:.3f}"
        )
    if summary.note:
        out.print(f"[dim]note: {summary.note}[/dim]")


def _exit_for(not_judged: list[NotJudged]) -> None:
    for entry in not_judged:
        err.print(f"not judged: {entry.kernel}: {entry.reason}", markup=False, style="red")
    if any(entry.judge_failed for entry in not_judged):
        err.print("rerun the same command to judge them (with --out, what is done is kept)")
        raise typer.Exit(EXIT_JUDGE)
    if not_judged:
        err.print("fix or remove those files; the other kernels' verdicts stand")
        raise typer.Exit(EXIT_USAGE)
