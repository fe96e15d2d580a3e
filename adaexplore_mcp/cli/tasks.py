"""`adaexplore-mcp tasks`: list, show and lint tasks, print bundled solutions."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Annotated

import typer

from adaexplore_mcp.cli.common import (
    DeviceOption,
    JudgeTokenOption,
    JudgeUrlOption,
    err,
    fail,
    load_task,
    out,
    settings_with,
)
from adaexplore_mcp.cli.judging import request_device, with_judge
from adaexplore_mcp.judge import Judge
from adaexplore_mcp.tasks import (
    bundled_solution,
    bundled_tasks,
    solution_names,
)

app = typer.Typer(help="List, show and lint tasks.", no_args_is_help=True)


@app.command("list")
def tasks_list(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    level: Annotated[int | None, typer.Option(min=1, max=3, help="Only this level.")] = None,
) -> None:
    """The bundled tasks, one per line."""
    solutions = set(solution_names())
    for task in bundled_tasks():
        if level is not None and task.level != level:
            continue
        if as_json:
            row = {
                "name": task.name,
                "level": task.level,
                "summary": task.summary,
                "hash": task.hash,
                "has_solution": task.name in solutions,
                "variants": [v.describe() for v in task.variants],
            }
            sys.stdout.write(json.dumps(row) + "\n")
        else:
            mark = "  [solution]" if task.name in solutions else ""
            out.print(f"level{task.level}  {task.name:<24} {task.summary}{mark}", markup=False)


@app.command("show")
def tasks_show(
    name: Annotated[str, typer.Argument(help="A bundled task name or a task file path.")],
    as_json: Annotated[bool, typer.Option("--json", help="The task as JSON.")] = False,
) -> None:
    """A task's description, shape variants, tolerance and reference source."""
    task = load_task(name)
    if as_json:
        sys.stdout.write(task.model_dump_json() + "\n")
        return
    out.print(f"[bold]{task.name}[/bold]" + (f"  (level {task.level})" if task.level else ""))
    out.print(task.summary, markup=False)
    if task.description:
        out.print(task.description, markup=False)
    out.print(f"hash {task.hash}")
    for variant in task.variants:
        out.print(f"  {variant.role.value:<9} {variant.describe()}", markup=False)
    if task.tolerance:
        out.print(f"tolerance atol={task.tolerance.atol:g} rtol={task.tolerance.rtol:g}")
    if bundled_solution(task.name) is not None and task.level:
        out.print(f"bundled solution: adaexplore-mcp tasks solution {task.name}")
    out.print()
    out.print(task.source, markup=False)


@app.command("solution")
def tasks_solution(name: Annotated[str, typer.Argument(help="A bundled task name.")]) -> None:
    """Print the bundled Triton solution of a task (a valid candidate file)."""
    code = bundled_solution(name)
    if code is None:
        raise fail(
            f"no bundled solution for {name!r}; these have one: {', '.join(solution_names())}"
        )
    sys.stdout.write(code)


@app.command("lint")
def tasks_lint(
    names: Annotated[
        list[str] | None, typer.Argument(help="Task names or paths; default: every bundled task.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One LintReport per line.")] = False,
    device: DeviceOption = None,
    judge_url: JudgeUrlOption = None,
    judge_token: JudgeTokenOption = None,
) -> None:
    """Flag tasks a kernel could pass without computing the answer (zeros, constants, outputs
    that do not depend on the inputs), and references that are nondeterministic or produce
    NaN. Exits 1 when any task is flagged."""
    tasks = [load_task(n) for n in names] if names else bundled_tasks()
    settings = settings_with(device, judge_url=judge_url, judge_token=judge_token)
    target = request_device(settings, device)

    async def work(judge: Judge):
        with err.status(f"linting {len(tasks)} tasks…"):
            return await asyncio.gather(*(judge.lint(task, device=target) for task in tasks))

    reports = with_judge(settings, work)
    flagged = 0
    for report in reports:
        flagged += not report.ok
        if as_json:
            sys.stdout.write(report.model_dump_json() + "\n")
            continue
        if report.ok:
            out.print(f"[green]ok[/green]    {report.task}  ({len(report.variants)} shapes)")
        else:
            out.print(f"[red]flag[/red]  {report.task}")
        for skipped in report.skipped:
            out.print(f"      not linted: {skipped.variant}: {skipped.reason}", markup=False)
        if report.ok:
            continue
        if report.error:
            out.print(f"      {report.error}", markup=False)
        for finding in report.findings:
            output = f" output {finding.output_index}" if finding.output_index is not None else ""
            out.print(
                f"      {finding.check}: {finding.detail} ({finding.variant}{output})", markup=False
            )
    if flagged:
        raise typer.Exit(1)
