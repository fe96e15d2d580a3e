"""`adaexplore-mcp drive`: an unattended run of a strategy on tasks, with a live table."""

from __future__ import annotations

import asyncio
import logging
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.logging import RichHandler

from adaexplore_mcp.cli.common import (
    BaseUrlOption,
    DeviceOption,
    JudgeTokenOption,
    JudgeUrlOption,
    ModelOption,
    ProviderOption,
    err,
    fail,
    out,
    settings_with,
)
from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge.policy import Ops, Precision

EXIT_INTERRUPTED = 130


class StrategyChoice(StrEnum):
    ADAEXPLORE = "adaexplore"
    ONE_SHOT = "one-shot"
    BEST_OF_N = "best-of-n"
    REFINE = "refine"
    METR = "metr"


class MemoryChoice(StrEnum):
    NONE = "none"
    RULES = "rules"
    REASONING_BANK = "reasoning-bank"


def drive_command(
    task: Annotated[
        list[str] | None,
        typer.Option(
            "--task", help="A bundled task's name or a task file's path; repeat for several."
        ),
    ] = None,
    tasks_from: Annotated[
        Path | None,
        typer.Option(
            "--tasks",
            help="A file with one task a line (names or paths; '#' comments), or a directory "
            "whose *.py files are tasks.",
        ),
    ] = None,
    strategy: Annotated[
        StrategyChoice | None,
        typer.Option(help="adaexplore (default), one-shot, best-of-n, refine or metr."),
    ] = None,
    steps: Annotated[
        int | None, typer.Option(min=1, max=10_000, help="Steps per task. Default: 10.")
    ] = None,
    memory: Annotated[
        MemoryChoice | None,
        typer.Option(
            help="rules (default): the skill memory's rules in every prompt, failures filed; "
            "none; reasoning-bank: lessons of similar finished tasks."
        ),
    ] = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    workers: Annotated[
        int, typer.Option(min=1, max=256, help="Steps in flight at once, over all tasks.")
    ] = 1,
    run_dir: Annotated[
        Path | None,
        typer.Option(
            help="Where the run is written. Default: ADAEXPLORE_HOME/runs/<time>-<strategy>."
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume", help="Continue the run in --run-dir up to its steps; nothing is redone."
        ),
    ] = False,
    seed: Annotated[
        int | None, typer.Option(min=0, help="Seed of the searches' coins (and of metr).")
    ] = None,
    precision: Annotated[
        Precision | None,
        typer.Option(help="strict (default), tf32 or legacy: how float32 work is judged."),
    ] = None,
    ops: Annotated[
        Ops | None,
        typer.Option(
            help="triton (default): every computation in Triton; mixed: torch's library "
            "operators may stay beside Triton kernels that do real work."
        ),
    ] = None,
    stream: Annotated[
        bool | None,
        typer.Option(
            "--stream/--no-stream",
            help="Use the provider's streaming API. Default: ADAEXPLORE_DRIVER__STREAM.",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No live table.")] = False,
    judge_url: JudgeUrlOption = None,
    judge_token: JudgeTokenOption = None,
    device: DeviceOption = None,
) -> None:
    """Optimize kernels unattended: a strategy's steps on each task, with a model of yours.

    Every prompt, reply, kernel and verdict goes into the run directory; an interrupted run continues with --resume. Exits 2 for a usage or key problem, 3 when the judge cannot run, 130 on Ctrl-C.
    """  # noqa: E501 (one paragraph: typer keeps the docstring's line breaks)
    from adaexplore_mcp.driver import DriveSpec, RunConfig
    from adaexplore_mcp.rundir import RunDir, RunDirError, runs_root

    settings = settings_with(device, judge_url=judge_url, judge_token=judge_token)
    names = _task_refs(task or [], tasks_from)
    config: RunConfig | None = None
    if resume:
        if run_dir is None:
            raise fail("--resume needs the --run-dir of the run to continue")
        try:
            _, config = RunDir.reopen(run_dir)
        except RunDirError as exc:
            raise fail(str(exc)) from None
        if config.replay:
            raise fail(f"{run_dir} replayed a transcript (the demo); start a new run instead")
    chosen_strategy = strategy.value if strategy else (config.strategy if config else "adaexplore")
    llm_settings = settings.llm.model_copy(
        update={
            key: value
            for key, value in {
                "provider": provider.value if provider else (config.provider if config else None),
                "model": model or (config.model if config else None),
                "base_url": base_url or (config.base_url if config else None),
            }.items()
            if value is not None
        }
    )
    if llm_settings.provider is None:
        raise fail("no model to drive: give --provider anthropic|openai and --model NAME")
    if stream is not None:
        driver = settings.driver.model_copy(update={"stream": stream})
        settings = settings.model_copy(update={"driver": driver})
    settings = settings.model_copy(update={"llm": llm_settings})
    if run_dir is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        run_dir = runs_root(settings.home) / f"{stamp}-{chosen_strategy}"
    try:
        spec = DriveSpec(
            strategy=chosen_strategy,
            memory=memory.value if memory else (config.memory if config else "rules"),
            steps=steps or (config.steps if config else 10),
            workers=workers,
            tasks=names,
            run_dir=run_dir,
            resume=resume,
            seed=seed,
            precision=precision,
            ops=ops,
        )
    except ValueError as exc:
        raise fail(str(exc)) from None
    if not resume and not names:
        raise fail("no task to run: give --task NAME (repeatable) or --tasks FILE|DIR")
    if spec.strategy == "one-shot" and spec.steps > 1:
        err.print("one-shot writes one kernel per task: --steps is 1 for it (best-of-n: N)")
    run_and_report(spec, settings, quiet=quiet)


def _task_refs(tasks: list[str], source: Path | None) -> list[str]:
    refs = list(tasks)
    if source is None:
        return refs
    if source.is_dir():
        files = sorted(p for p in source.glob("*.py") if not p.name.startswith("_"))
        if not files:
            raise fail(f"{source} holds no task files (*.py)")
        return refs + [str(p.resolve()) for p in files]
    if not source.is_file():
        raise fail(f"--tasks {source}: no such file or directory")
    for line in source.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.endswith(".py") or "/" in line:  # a path, relative to the list's folder
            line = str((source.parent / line).resolve())
        refs.append(line)
    return refs


def run_and_report(spec, settings: Settings, *, quiet: bool, llm=None, intro: str | None = None):
    """Opens the model (unless given), runs the spec with a live table on standard error,
    prints the summary, and turns every way a run can end into an exit status."""
    from adaexplore_mcp.driver import (
        DriveError,
        LiveDisplay,
        QuietObserver,
        drive,
        progress_table,
    )
    from adaexplore_mcp.llm import LLMNotConfigured, open_llm
    from adaexplore_mcp.rundir import RunDirError, is_run_dir

    logging.basicConfig(
        level=logging.WARNING,
        handlers=[RichHandler(console=err, show_time=False, show_path=False)],
        format="%(message)s",
    )
    if llm is None:
        try:
            llm = open_llm(settings.llm)
        except LLMNotConfigured as exc:
            raise fail(str(exc)) from None
    display = QuietObserver() if quiet else LiveDisplay(err)
    resume_hint = f"adaexplore-mcp drive --resume --run-dir {spec.run_dir}"

    async def main():
        async with llm:
            if quiet:
                return await drive(spec, settings, llm, observer=display)
            with display:  # type: ignore[union-attr]
                return await drive(spec, settings, llm, observer=display)

    if intro:
        out.print(intro, markup=False)
    try:
        result = asyncio.run(main())
    except KeyboardInterrupt:
        _print_last(display)
        # soft_wrap: a command to copy must not be broken at the terminal's width
        err.print("interrupted; every finished step is recorded. Resume with:", soft_wrap=True)
        err.print(f"  {resume_hint}", markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except (DriveError, RunDirError) as exc:
        _print_last(display)
        err.print("[red]error:[/red] ", end="")
        err.print(str(exc), markup=False, soft_wrap=True)
        if is_run_dir(spec.run_dir):
            err.print("The finished steps are recorded; after fixing it, resume with:")
            err.print(f"  {resume_hint}", markup=False, soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None
    if display.last is not None:
        out.print(progress_table(display.last))
    out.print(f"run directory: {result.run_dir}", markup=False, soft_wrap=True)
    if not result.complete:
        out.print(f"{result.steps_done} of {result.steps_planned} steps done; resume with:")
        out.print(f"  {resume_hint}", markup=False, soft_wrap=True)
    return result


def _print_last(display) -> None:
    from adaexplore_mcp.driver import progress_table

    if display.last is not None:
        err.print(progress_table(display.last))
