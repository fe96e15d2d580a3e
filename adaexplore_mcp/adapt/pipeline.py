"""The Adapt stage end to end: synthesize training tasks, keep the valid ones as task files,
run a strategy on them with the rule memory recording failures, and report what it learned.

    result = await adapt(AdaptSpec(count=4, out_dir=home / "adapt" / "tasks"), settings, llm)
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from adaexplore_mcp.adapt.learned import LearnedRules, learned, snapshot
from adaexplore_mcp.adapt.synthesis import (
    KnownTasks,
    Mode,
    SynthesisAttempt,
    pick_examples,
    synthesize,
    validate,
)
from adaexplore_mcp.app import App, open_app
from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge import Judge
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.llm import LLM
from adaexplore_mcp.rundir import Strategy, runs_root, write_text
from adaexplore_mcp.tasks import Task, TaskError, bundled_tasks, load_task_file

if TYPE_CHECKING:  # the driver is imported only when the stage drives a search
    from adaexplore_mcp.driver import Observer

log = logging.getLogger(__name__)

LOG_FILE = "candidates.jsonl"


class AdaptSpec(BaseModel):
    count: int = Field(default=4, ge=1, le=1000, description="Tasks to keep.")
    attempts: int | None = Field(
        default=None, ge=1, description="Most tasks to ask the model for; default 3 x count."
    )
    strategy: Strategy = "adaexplore"
    steps: int = Field(default=10, ge=1, description="Steps per synthesized task.")
    workers: int = Field(default=1, ge=1)
    out_dir: Path = Field(description="Where the kept tasks are written, one file each.")
    run_dir: Path | None = Field(
        default=None, description="The strategy's run directory; default beside out_dir."
    )
    seed: int | None = None
    precision: Precision | None = None
    ops: Ops | None = None
    run_strategy: bool = Field(default=True, description="False: synthesize and validate only.")


class AdaptResult(BaseModel):
    candidates: list[SynthesisAttempt]
    tasks: list[str] = Field(description="Paths of the kept tasks, in the order they were kept.")
    run_dir: str | None = Field(description="The strategy's run directory (None if not run).")
    rules: LearnedRules | None = Field(description="None when the strategy did not run.")
    input_tokens: int = Field(description="Tokens of the synthesis calls (the run's: usage.json).")
    output_tokens: int


async def adapt(
    spec: AdaptSpec,
    settings: Settings,
    llm: LLM,
    *,
    judge: Judge | None = None,
    on_candidate: Callable[[SynthesisAttempt], None] | None = None,
    observer: Observer | None = None,
) -> AdaptResult:
    """Runs the stage; a ``judge`` passed in is used (and left open), else one is started."""
    # the stage's memory is only read (what the run learned); the run files its own failures
    async with open_app(settings, judge=judge, distil=False) as app:
        if judge is None:
            await app.judge.start()
        # the judge itself (started, or lent as it is) goes on to the run, which wraps its own
        return await _adapt(spec, app, app.judge.inner, llm, on_candidate, observer)


async def _adapt(
    spec: AdaptSpec,
    app: App,
    judge: Judge,
    llm: LLM,
    on_candidate: Callable[[SynthesisAttempt], None] | None,
    observer: Observer | None,
) -> AdaptResult:
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    sources = bundled_tasks()
    known = KnownTasks([*sources, *_stored(spec.out_dir)])
    rng = random.Random(spec.seed)
    candidates: list[SynthesisAttempt] = []
    kept: list[Path] = []
    for attempt in range(1, (spec.attempts or 3 * spec.count) + 1):
        if len(kept) >= spec.count:
            break
        mode: Mode = "mutate" if attempt % 2 else "recombine"
        examples = pick_examples(sources, rng)
        candidate, source = await synthesize(llm, examples, mode, sorted(known.names), attempt)
        if source is not None:
            task = await validate(candidate, source, known, judge)
            if task is not None:
                path = spec.out_dir / f"{task.name}.py"
                write_text(path, source)
                candidate.path = str(path)
                kept.append(path)
        _log(spec.out_dir, candidate)
        candidates.append(candidate)
        if on_candidate is not None:
            on_candidate(candidate)
    result = AdaptResult(
        candidates=candidates,
        tasks=[str(p) for p in kept],
        run_dir=None,
        rules=None,
        input_tokens=sum(c.input_tokens for c in candidates),
        output_tokens=sum(c.output_tokens for c in candidates),
    )
    if not spec.run_strategy or not kept:
        return result
    run_dir = spec.run_dir or runs_root(spec.out_dir.parent) / time.strftime("%Y%m%d-%H%M%S")
    # read with the run's own memory settings, so a starter memory installed on first use is
    # in the "before" picture and not reported as learned
    memory = app.memory
    before = snapshot(memory, time.time())
    await _run_strategy(spec, app.settings, llm, judge, kept, run_dir, observer)
    return result.model_copy(update={"run_dir": str(run_dir), "rules": learned(memory, before)})


async def _run_strategy(
    spec: AdaptSpec,
    settings: Settings,
    llm: LLM,
    judge: Judge,
    tasks: list[Path],
    run_dir: Path,
    observer: Observer | None,
) -> None:
    # imported here: the driver builds the MCP server, which only this step needs
    from adaexplore_mcp.driver import DriveSpec, drive

    drive_spec = DriveSpec(
        strategy=spec.strategy,
        memory="rules",  # the point of the stage: failures are filed and rules distilled
        steps=spec.steps,
        workers=spec.workers,
        tasks=[str(path) for path in tasks],
        run_dir=run_dir,
        seed=spec.seed,
        precision=spec.precision,
        ops=spec.ops,
    )
    # The driver neither closes a judge it is lent nor starts a second pool (start is
    # idempotent), so the stage's own judge is passed as it is.
    await drive(drive_spec, settings, llm, judge=judge, observer=observer)


def _stored(folder: Path) -> list[Task]:
    """Tasks an earlier adapt run kept in the same folder: new ones must not repeat them."""
    tasks = []
    for path in sorted(folder.glob("*.py")):
        try:
            tasks.append(load_task_file(path))
        except TaskError as exc:
            log.warning("ignoring %s: %s", path, exc)
    return tasks


def _log(folder: Path, candidate: SynthesisAttempt) -> None:
    with (folder / LOG_FILE).open("a", encoding="utf-8") as file:
        file.write(json.dumps(candidate.model_dump(mode="json")) + "\n")
