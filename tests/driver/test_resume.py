"""An interrupted run resumes: no finished step lost, none done twice, the same searches."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest

from adaexplore_mcp.driver import DriveSpec, RunDir, RunDirError, RunMismatch, drive
from adaexplore_mcp.rundir import read_events, step_dir

from .conftest import Recorder, llm_for, run_settings


def test_an_interrupted_run_resumes_without_losing_or_repeating_a_step(
    tmp_path, run_driver, model, driver_loop, shared_judge, fake_server
):
    settings = run_settings(tmp_path / "home")
    run_dir = tmp_path / "run"
    spec = DriveSpec(
        strategy="adaexplore", steps=6, workers=2, tasks=["gelu", "softmax"], run_dir=run_dir
    )

    async def interrupted() -> None:
        """Cancels the run (as Ctrl-C does) once three steps are finished."""
        main = asyncio.current_task()
        assert main is not None

        class Interrupt(Recorder):
            def update(self, progress):
                super().update(progress)
                if sum(row.done for row in progress.tasks) >= 3:
                    main.cancel()

        async with llm_for(fake_server, "openai") as llm:
            await drive(spec, settings, llm, judge=shared_judge, observer=Interrupt())

    with pytest.raises((asyncio.CancelledError, Exception)) as stopped:
        driver_loop.run(interrupted())
    assert "Cancelled" in type(stopped.value).__name__
    first = read_events(run_dir)
    assert 3 <= len(first) < 12
    searches = {
        task: json.loads((run_dir / f"tasks/{task}/task.json").read_text())["search_id"]
        for task in ("gelu", "softmax")
    }
    # a step that never finished: its folder holds a prompt but no step.json
    stale = step_dir(run_dir, "softmax", 6)
    stale.mkdir(parents=True, exist_ok=True)
    (stale / "prompt.txt").write_text("an attempt cut short\n")
    # a step whose step.json was written but not its line in events.jsonl
    lines = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    cut = json.loads(lines[-1])
    (run_dir / "events.jsonl").write_text("".join(lines[:-1]))

    resumed = run_driver(
        settings,
        "openai",
        strategy="adaexplore",
        steps=6,
        workers=2,
        run_dir=run_dir,
        resume=True,
    )
    records = read_events(run_dir)
    assert Counter(r.task for r in records) == {"gelu": 6, "softmax": 6}
    assert sorted((r.task, r.step) for r in records) == sorted(
        (task, n) for task in ("gelu", "softmax") for n in range(1, 7)
    )
    for record in records:
        folder = step_dir(run_dir, record.task, record.step)
        assert json.loads((folder / "step.json").read_text())["step"] == record.step
        assert (folder / "prompt.txt").read_text() != "an attempt cut short\n"
    again = next(r for r in records if (r.task, r.step) == (cut["task"], cut["step"]))
    assert again.started_at == cut["started_at"]  # restored, not redone
    for task, search_id in searches.items():
        assert json.loads((run_dir / f"tasks/{task}/task.json").read_text())["search_id"] == (
            search_id
        )
    assert resumed.steps_done == 12 and resumed.complete
    assert {s.steps for s in resumed.summaries} == {6}
    # a finished run resumed again has nothing left to do
    done = run_driver(
        settings, "openai", strategy="adaexplore", steps=6, run_dir=run_dir, resume=True
    )
    assert done.steps_done == 12 and len(read_events(run_dir)) == 12


def test_resuming_with_other_options_or_starting_over_a_run_is_refused(tmp_path, run_driver, model):
    settings = run_settings(tmp_path / "home")
    run_dir = tmp_path / "run"
    run_driver(settings, "openai", strategy="best-of-n", steps=1, tasks=["gelu"], run_dir=run_dir)
    with pytest.raises(RunMismatch, match="strategy: the run has 'best-of-n', not 'refine'"):
        run_driver(settings, "openai", strategy="refine", steps=1, run_dir=run_dir, resume=True)
    with pytest.raises(RunMismatch, match="runs the tasks gelu, not softmax"):
        run_driver(
            settings,
            "openai",
            strategy="best-of-n",
            steps=1,
            tasks=["softmax"],
            run_dir=run_dir,
            resume=True,
        )
    with pytest.raises(RunMismatch, match="provider: the run has 'openai', not 'anthropic'"):
        run_driver(
            settings, "anthropic", strategy="best-of-n", steps=1, run_dir=run_dir, resume=True
        )
    with pytest.raises(RunDirError, match="already holds a run: add --resume"):
        run_driver(
            settings, "openai", strategy="best-of-n", steps=1, tasks=["gelu"], run_dir=run_dir
        )
    with pytest.raises(RunDirError, match="holds no run"):
        RunDir.reopen(tmp_path / "elsewhere")
