"""The ``adaexplore-mcp`` command line. Every command is a thin call into the packages."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge import EvalResult, Judge, JudgeError, Phase, Status, open_judge
from adaexplore_mcp.judge.devices import parse_device_spec
from adaexplore_mcp.tasks import (
    Task,
    TaskError,
    bundled_solution,
    bundled_tasks,
    resolve_task,
    solution_names,
)

app = typer.Typer(
    help="Optimize GPU kernels with the AdaExplore method: MCP server, judge and driver.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
tasks_app = typer.Typer(help="List, show and lint tasks.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")
judge_app = typer.Typer(help="Run the judge as a service for other machines.", no_args_is_help=True)
app.add_typer(judge_app, name="judge")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)
T = TypeVar("T")

EXIT_USAGE = 2
EXIT_JUDGE = 3

DeviceOption = Annotated[
    str | None,
    typer.Option(
        help="cpu, cuda:N, cuda (every GPU) or auto. Default: ADAEXPLORE_JUDGE__DEVICE or auto."
    ),
]
JudgeUrlOption = Annotated[
    str | None,
    typer.Option(
        "--judge",
        help="URL of a judge service (adaexplore-mcp judge serve) to use instead of a local "
        "judge. Default: ADAEXPLORE_REMOTE__URL.",
    ),
]
JudgeTokenOption = Annotated[
    str | None,
    typer.Option(
        "--judge-token", help="The judge service's token. Default: ADAEXPLORE_REMOTE__TOKEN."
    ),
]


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}")
    return typer.Exit(code)


def _settings(
    device: str | None = None,
    timeout: float | None = None,
    judge_url: str | None = None,
    judge_token: str | None = None,
) -> Settings:
    settings = Settings()
    updates = {}
    if device is not None:
        updates["device"] = device
    if timeout is not None:
        updates["timeout_s"] = timeout
    if updates:
        judge = settings.judge.model_validate({**settings.judge.model_dump(), **updates})
        settings = settings.model_copy(update={"judge": judge})
    remote = {"url": judge_url, "token": judge_token}
    remote = {key: value for key, value in remote.items() if value is not None}
    if remote:
        settings = settings.model_copy(update={"remote": settings.remote.model_copy(update=remote)})
    return settings


def _request_device(settings: Settings, device: str | None) -> str | None:
    """The device an evaluation names: a local judge was started on --device already; a judge
    service picks its least busy device unless one is named."""
    if not settings.remote.url or device is None:
        return None
    spec = parse_device_spec(device)
    if spec.kind == "cpu":
        return "cpu"
    if spec.indices is not None and len(spec.indices) == 1:
        return f"cuda:{spec.indices[0]}"
    if spec.indices is not None:
        raise _fail("with --judge, --device names one device (cpu or cuda:N), or none")
    return None


def _with_judge(settings: Settings, work: Callable[[Judge], Awaitable[T]]) -> T:
    async def main() -> T:
        where = (
            f"the judge service at {settings.remote.url}" if settings.remote.url else "the judge"
        )
        with err.status(f"starting {where}…"):
            judge = open_judge(settings)
            await judge.start()
        try:
            return await work(judge)
        finally:
            await judge.close()

    try:
        return asyncio.run(main())
    except TaskError as exc:
        raise _fail(str(exc)) from None
    except JudgeError as exc:
        raise _fail(f"the judge could not run: {exc}", EXIT_JUDGE) from None
    except ValueError as exc:
        raise _fail(str(exc)) from None


def _load_task(name_or_path: str) -> Task:
    try:
        return resolve_task(name_or_path)
    except TaskError as exc:
        raise _fail(str(exc)) from None


@app.command("eval")
def eval_command(
    task: Annotated[str, typer.Argument(help="A bundled task name or the path of a task file.")],
    kernel: Annotated[
        Path | None,
        typer.Argument(help="The candidate file (defines ModelNew); '-' reads standard input."),
    ] = None,
    solution: Annotated[
        bool, typer.Option("--solution", help="Evaluate the task's bundled Triton solution.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the EvalResult as JSON.")] = False,
    timeout: Annotated[
        float | None, typer.Option(min=1, help="Wall-clock limit in seconds.")
    ] = None,
    device: DeviceOption = None,
    judge_url: JudgeUrlOption = None,
    judge_token: JudgeTokenOption = None,
) -> None:
    """Judge one candidate kernel: correctness on every shape variant, then timing on a GPU.

    Exits 0 for any verdict (see the status); non-zero only when the judge could not run.
    """
    resolved = _load_task(task)
    code = _read_kernel(resolved, kernel, solution)
    settings = _settings(device, timeout, judge_url, judge_token)
    target = _request_device(settings, device)

    async def work(judge: Judge) -> EvalResult:
        with err.status(f"{resolved.name}: queued") as status:

            def progress(phase: Phase, elapsed: float) -> None:
                status.update(f"{resolved.name}: {phase.value} ({elapsed:.1f}s)")

            return await judge.evaluate(
                resolved, code, device=target, timeout_s=timeout, on_progress=progress
            )

    result = _with_judge(settings, work)
    if as_json:
        sys.stdout.write(result.model_dump_json() + "\n")
    else:
        _print_result(result)


def _read_kernel(task: Task, kernel: Path | None, solution: bool) -> str:
    if solution == (kernel is not None):
        raise _fail("give a KERNEL file or --solution (not both)")
    if solution:
        code = bundled_solution(task.name)
        if code is None:
            names = ", ".join(solution_names())
            raise _fail(f"task {task.name!r} has no bundled solution; these do: {names}")
        return code
    assert kernel is not None
    if str(kernel) == "-":
        return sys.stdin.read()
    try:
        return kernel.read_text(encoding="utf-8")
    except OSError as exc:
        raise _fail(f"cannot read the kernel file {kernel}: {exc.strerror or exc}") from None


_STATUS_STYLE = {
    Status.CORRECT: "bold green",
    Status.INCORRECT: "bold yellow",
    Status.REJECTED: "bold magenta",
}


def _print_result(result: EvalResult) -> None:
    style = _STATUS_STYLE.get(result.status, "bold red")
    out.print(
        f"[{style}]{result.status.value}[/{style}]  {result.task}  kernel {result.kernel_hash}"
    )
    out.print(result.message)
    if result.error and result.error.traceback:
        out.print(result.error.traceback, markup=False)
    if result.runtime is not None:
        table = Table(box=None, pad_edge=False)
        for column in ("", "median ms", "mean ms", "std ms", "min ms", "n", "speedup"):
            table.add_column(column, justify="right" if column else "left")
        rows = [
            ("kernel", result.runtime, None),
            ("eager", result.eager, result.speedup_eager),
            ("torch.compile", result.compiled, result.speedup_compile),
        ]
        for label, stats, speedup in rows:
            if stats is None:
                continue
            table.add_row(
                label,
                f"{stats.median_ms:.4f}",
                f"{stats.mean_ms:.4f}",
                f"{stats.std_ms:.4f}",
                f"{stats.min_ms:.4f}",
                str(stats.n),
                f"{speedup:.2f}x" if speedup else "",
            )
        out.print(table)
    if result.output_tail:
        out.print("[dim]kernel output (tail):[/dim]")
        out.print(result.output_tail.rstrip()[-1000:], markup=False)
    env = result.environment
    if env is not None:
        phases = result.phases
        out.print(
            f"[dim]{env.device_name}, torch {env.torch}, triton {env.triton} · compile "
            f"{phases.compile_s:.2f}s · check {phases.check_s:.2f}s · timing "
            f"{phases.timing_s:.2f}s · total {phases.total_s:.2f}s[/dim]"
        )


@tasks_app.command("list")
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


@tasks_app.command("show")
def tasks_show(
    name: Annotated[str, typer.Argument(help="A bundled task name or a task file path.")],
    as_json: Annotated[bool, typer.Option("--json", help="The task as JSON.")] = False,
) -> None:
    """A task's description, shape variants, tolerance and reference source."""
    task = _load_task(name)
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


@tasks_app.command("solution")
def tasks_solution(name: Annotated[str, typer.Argument(help="A bundled task name.")]) -> None:
    """Print the bundled Triton solution of a task (a valid candidate file)."""
    code = bundled_solution(name)
    if code is None:
        raise _fail(
            f"no bundled solution for {name!r}; these have one: {', '.join(solution_names())}"
        )
    sys.stdout.write(code)


@tasks_app.command("lint")
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
    tasks = [_load_task(n) for n in names] if names else bundled_tasks()
    settings = _settings(device, judge_url=judge_url, judge_token=judge_token)
    target = _request_device(settings, device)

    async def work(judge: Judge):
        with err.status(f"linting {len(tasks)} tasks…"):
            return await asyncio.gather(*(judge.lint(task, device=target) for task in tasks))

    reports = _with_judge(settings, work)
    flagged = 0
    for report in reports:
        flagged += not report.ok
        if as_json:
            sys.stdout.write(report.model_dump_json() + "\n")
            continue
        if report.ok:
            out.print(f"[green]ok[/green]    {report.task}  ({len(report.variants)} shapes)")
            continue
        out.print(f"[red]flag[/red]  {report.task}")
        if report.error:
            out.print(f"      {report.error}", markup=False)
        for finding in report.findings:
            output = f" output {finding.output_index}" if finding.output_index is not None else ""
            out.print(
                f"      {finding.check}: {finding.detail} ({finding.variant}{output})", markup=False
            )
    if flagged:
        raise typer.Exit(1)


@judge_app.command("serve")
def judge_serve(
    host: Annotated[
        str | None,
        typer.Option(help="Address to listen on. Default: ADAEXPLORE_SERVICE__HOST or 127.0.0.1."),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            min=0, max=65535, help="Default: ADAEXPLORE_SERVICE__PORT or 8765; 0 picks a free one."
        ),
    ] = None,
    gpus: Annotated[
        str | None,
        typer.Option(help="GPU indices to serve, e.g. 0,1 (the same as --device cuda:0,1)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="Bearer token every request must carry; required to listen beyond loopback. "
            "Default: ADAEXPLORE_SERVICE__TOKEN."
        ),
    ] = None,
    device: DeviceOption = None,
) -> None:
    """Serve the judge over HTTP (docs/judge-service.md) until Ctrl-C; clients use it with
    --judge URL."""
    from adaexplore_mcp.judge.server import serve

    if gpus is not None and device is not None:
        raise _fail("give --gpus or --device, not both")
    if gpus is not None:
        device = "cuda:" + gpus.replace(" ", "")
    try:
        settings = _settings(device)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    overrides = {"host": host, "port": port, "token": token}
    service = settings.service.model_copy(
        update={key: value for key, value in overrides.items() if value is not None}
    )

    def listening(url: str) -> None:
        auth = "a bearer token required" if service.token else "no token: this machine only"
        out.print(f"listening on {url} ({auth})", markup=False)
        out.print(f"use it with: adaexplore-mcp eval TASK KERNEL --judge {url}", markup=False)
        sys.stdout.flush()

    with err.status("starting the judge…") as status:

        def ready(url: str) -> None:
            status.stop()
            listening(url)

        try:
            asyncio.run(serve(settings.judge, service, settings.home, on_listening=ready))
        except JudgeError as exc:
            raise _fail(f"the judge could not start: {exc}", EXIT_JUDGE) from None
        except ValueError as exc:
            raise _fail(str(exc)) from None


if __name__ == "__main__":
    app()
