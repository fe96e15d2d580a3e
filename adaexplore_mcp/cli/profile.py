"""`adaexplore-mcp profile`: Nsight Compute's view of one kernel's longest kernels."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from adaexplore_mcp.cli.common import (
    EXIT_JUDGE,
    DeviceOption,
    err,
    fail,
    load_task,
    out,
    settings_with,
)
from adaexplore_mcp.cli.evaluate import _read_kernel
from adaexplore_mcp.judge.profile import ProfileError, Profiler, ProfileReport
from adaexplore_mcp.judge.profile.models import MAX_KERNELS


def profile_command(
    task: Annotated[str, typer.Argument(help="A bundled task name or the path of a task file.")],
    kernel: Annotated[
        Path | None,
        typer.Argument(help="The candidate file (defines ModelNew); '-' reads standard input."),
    ] = None,
    solution: Annotated[
        bool, typer.Option("--solution", help="Profile the task's bundled Triton solution.")
    ] = False,
    top: Annotated[
        int, typer.Option(min=1, max=MAX_KERNELS, help="How many of the longest kernels.")
    ] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    device: DeviceOption = None,
) -> None:
    """Profile a kernel with Nsight Compute (ncu) on this machine's GPU: the longest kernels of
    a few calls of forward, with their throughput, occupancy and what bounds them.
    Informational, never a verdict (`adaexplore-mcp eval` judges). Exits 3 when ncu or a GPU is
    missing or the profile fails."""
    resolved = load_task(task)
    code = _read_kernel(resolved, kernel, solution)
    settings = settings_with(device)
    profiler = Profiler(settings.judge, home=settings.home)
    try:
        with err.status(f"{resolved.name}: profiling with ncu"):
            report = asyncio.run(profiler.profile(resolved, code, top=top))
    except ProfileError as exc:
        raise fail(str(exc), EXIT_JUDGE) from None
    if as_json:
        out.print_json(report.model_dump_json())
    else:
        out.print(table_of(report))
        out.print(report.note)


def table_of(report: ProfileReport) -> Table:
    table = Table(
        title=f"{report.task} on {report.device}: {report.launches} launches in "
        f"{report.profiled_calls} calls of forward, {report.total_us:.1f} µs",
    )
    for column in ("kernel", "calls", "total µs", "share", "SM %", "mem %", "DRAM %", "occ %"):
        table.add_column(column, justify="left" if column == "kernel" else "right")
    table.add_column("regs", justify="right")
    table.add_column("bound by")
    for kernel in report.kernels:
        table.add_row(
            kernel.name,
            str(kernel.calls),
            f"{kernel.total_us:.1f}",
            f"{kernel.share:.0%}",
            *(_pct(v) for v in (kernel.sm_pct, kernel.memory_pct, kernel.dram_pct)),
            _pct(kernel.occupancy_pct),
            "-" if kernel.registers_per_thread is None else str(kernel.registers_per_thread),
            kernel.bound_by,
        )
    if report.omitted_kernels:
        table.caption = f"{report.omitted_kernels} shorter kernels left out (--top)"
    return table


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"
