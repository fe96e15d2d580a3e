"""`adaexplore-mcp adapt`: synthesize training tasks, run a strategy on them with the rule
memory on, and report the rules it learned."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, get_args

import typer

from adaexplore_mcp.cli.common import (
    EXIT_JUDGE,
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
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.rundir import Strategy


def adapt_command(
    count: Annotated[int, typer.Option(min=1, max=1000, help="Tasks to keep.")] = 4,
    attempts: Annotated[
        int | None,
        typer.Option(min=1, help="Most tasks to ask the model for. Default: 3 x --count."),
    ] = None,
    strategy: Annotated[
        str, typer.Option(help="adaexplore (default), one-shot, best-of-n, refine or metr.")
    ] = "adaexplore",
    steps: Annotated[int, typer.Option(min=1, help="Steps per synthesized task.")] = 10,
    workers: Annotated[int, typer.Option(min=1, max=256, help="Steps in flight at once.")] = 1,
    provider: ProviderOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="Where kept tasks go. Default: ADAEXPLORE_HOME/adapt/tasks."),
    ] = None,
    run_dir: Annotated[
        Path | None,
        typer.Option(help="The strategy's run directory. Default: beside --out, under runs/."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Seeds the choice of examples and coins.")
    ] = None,
    precision: Annotated[
        Precision | None, typer.Option(help="strict (default), tf32 or legacy.")
    ] = None,
    ops: Annotated[
        Ops | None,
        typer.Option(help="triton (default) or mixed (torch's library operators may stay)."),
    ] = None,
    synthesize_only: Annotated[
        bool, typer.Option("--synthesize-only", help="Keep the tasks; run no strategy.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object (AdaptResult).")] = False,
    device: DeviceOption = None,
    judge_url: JudgeUrlOption = None,
    judge_token: JudgeTokenOption = None,
) -> None:
    """Adapt: the model writes new tasks from the bundled suite (mutated or recombined
    operators); the valid ones (they parse, their reference runs and passes the lint, they
    repeat no task) are stored as task files; a strategy runs on them with the rule memory
    recording failures; the rules learned are reported (count, support, examples)."""
    from adaexplore_mcp.adapt import AdaptSpec, adapt
    from adaexplore_mcp.driver import DriveError
    from adaexplore_mcp.judge import JudgeError
    from adaexplore_mcp.llm import LLMNotConfigured, open_llm
    from adaexplore_mcp.rundir import RunDirError

    strategies = get_args(Strategy)
    if strategy not in strategies:
        raise fail(f"unknown strategy {strategy!r}; choose one of {', '.join(strategies)}")
    settings = settings_with(device, judge_url=judge_url, judge_token=judge_token)
    update = {"provider": provider, "model": model, "base_url": base_url}
    try:
        llm_settings = settings.llm.model_validate(
            settings.llm.model_dump() | {k: v for k, v in update.items() if v is not None}
        )
        spec = AdaptSpec(
            count=count,
            attempts=attempts,
            strategy=strategy,  # type: ignore[arg-type]
            steps=steps,
            workers=workers,
            out_dir=out_dir or settings.home / "adapt" / "tasks",
            run_dir=run_dir,
            seed=seed,
            precision=precision,
            ops=ops,
            run_strategy=not synthesize_only,
        )
        llm = open_llm(llm_settings)
    except (ValueError, LLMNotConfigured) as exc:
        raise fail(str(exc)) from None
    settings = settings.model_copy(update={"llm": llm_settings})

    def shown(candidate) -> None:
        verdict = f"kept {candidate.path}" if candidate.accepted else f"dropped: {candidate.reason}"
        name = candidate.name or "(no task)"
        err.print(f"task {candidate.attempt}: {name} ({candidate.mode}) {verdict}", markup=False)

    async def main():
        async with llm:
            return await adapt(spec, settings, llm, on_candidate=shown)

    try:
        result = asyncio.run(main())
    except (DriveError, RunDirError) as exc:
        raise fail(str(exc), exc.exit_code) from None
    except JudgeError as exc:
        raise fail(f"the judge could not run: {exc}", EXIT_JUDGE) from None
    if as_json:
        sys.stdout.write(result.model_dump_json() + "\n")
        return
    kept = len(result.tasks)
    out.print(f"{kept} of {len(result.candidates)} synthesized tasks kept in {spec.out_dir}")
    if result.run_dir:
        out.print(f"run directory: {result.run_dir}", markup=False)
    rules = result.rules
    if rules is None:
        return
    out.print(
        f"rules learned: {rules.new} new, {rules.activated} activated, {rules.strengthened} "
        f"with more support ({rules.active_total} active in the memory)"
    )
    for change in rules.rules:
        out.print(
            f"  [{change.change}] rule {change.id} ({change.status.value}, "
            f"{change.support_tasks} tasks, {change.support_failures} failures): {change.text}",
            markup=False,
        )
        for example in change.examples:
            out.print(f"      {example.task}: {example.error_type}: {example.error}", markup=False)
