"""`adaexplore-mcp report RUN_DIR|SEARCH_ID|RESULTS.jsonl`: one self-contained HTML file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from adaexplore_mcp.app import open_existing_store
from adaexplore_mcp.cli.common import fail, load_settings, out
from adaexplore_mcp.config import database_path
from adaexplore_mcp.report import (
    RunDirError,
    is_run_dir,
    load_run,
    report_for_run,
    report_for_search,
    write_report,
)
from adaexplore_mcp.rundir import RunPaths
from adaexplore_mcp.search_engine import UnknownSearch


def report_command(
    target: Annotated[
        str,
        typer.Argument(
            help="A run directory (from `adaexplore-mcp drive`), a search id from the store "
            "in ADAEXPLORE_HOME, or a problem set's results file (`eval PROBLEMS_DIR "
            "KERNELS_DIR --out FILE`)."
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Where to write the HTML. Default: RUN_DIR/report.html, "
            "report-SEARCH_ID.html here, or the results file with .html for .jsonl.",
        ),
    ] = None,
) -> None:
    """Write an HTML report: the search tree, the best speedup over steps, the best kernel
    with its diff to its parent, the rules in play, the run's statistics; for a problem set,
    its verdicts, fast_p and speedups. It needs no network: open it in any browser."""
    path = Path(target).expanduser()
    if path.is_file() and not is_run_dir(path):
        _report_results(path, output)
        return
    settings = load_settings()
    store = open_existing_store(settings.database_path)
    if path.is_dir() or is_run_dir(path):
        try:
            run = load_run(path)
            # The run's own home holds its searches, wherever ADAEXPLORE_HOME points now.
            if run.config.home and Path(run.config.home) != settings.home:
                store = open_existing_store(database_path(Path(run.config.home))) or store
            report = report_for_run(run, store)
        except RunDirError as exc:
            raise fail(str(exc)) from None
        destination = output or RunPaths(path).report
    elif "/" in target or target.endswith(".py") or path.exists():
        raise fail(
            f"{target} is neither a directory nor a file; pass a run directory, a search id "
            "or a problem set's results file"
        )
    else:
        if store is None:
            raise fail(
                f"{target!r} is not a directory, and there is no store at "
                f"{settings.database_path} to find a search with that id in; pass a run "
                "directory, or set ADAEXPLORE_HOME to the home the search ran in"
            )
        try:
            report = report_for_search(target, store)
        except UnknownSearch as exc:
            raise fail(f"{exc}; or pass a run directory") from None
        destination = output or Path(f"report-{target}.html")
    write_report(report, destination)
    out.print(str(destination), markup=False)


def _report_results(path: Path, output: Path | None) -> None:
    from adaexplore_mcp.report.problem_set import (
        SetReportError,
        report_for_results,
        write_set_report,
    )

    try:
        report = report_for_results(path)
    except (SetReportError, ValueError) as exc:
        raise fail(str(exc)) from None
    destination = output or path.with_suffix(".html")
    write_set_report(report, destination)
    out.print(str(destination), markup=False)
