"""How a run stops: a model that keeps failing, a refused key, a judge that cannot evaluate."""

from __future__ import annotations

import pytest

from adaexplore_mcp.driver import DriveSpec, JudgeUnreachable, ModelFailing, ModelRefused, drive
from adaexplore_mcp.judge import JudgeUnavailable
from adaexplore_mcp.rundir import read_events, step_dir
from tests.llm.fake_providers import Reply
from tests.mcp_server.conftest import StubJudge

from .conftest import llm_for, run_settings


def test_a_model_that_keeps_failing_stops_the_run_after_the_configured_count(
    tmp_path, run_driver, model, fake_server
):
    settings = run_settings(tmp_path / "home", max_llm_errors=2)
    fake_server.respond_with(Reply.error(503, "overloaded"))
    run_dir = tmp_path / "run"
    with pytest.raises(ModelFailing, match="failed in 2 steps in a row") as stopped:
        run_driver(
            settings, "openai", strategy="best-of-n", steps=5, tasks=["gelu"], run_dir=run_dir
        )
    assert stopped.value.exit_code == 1 and "503" in str(stopped.value)
    records = read_events(run_dir)
    assert [r.outcome for r in records] == ["llm_error", "llm_error"]
    assert all(r.reason and "failed 3 time(s)" in r.reason for r in records)


def test_a_refused_key_stops_the_run_at_once(tmp_path, run_driver, model, fake_server):
    settings = run_settings(tmp_path / "home")
    fake_server.respond_with(Reply.error(401, "invalid x-api-key"))
    with pytest.raises(ModelRefused, match="ANTHROPIC_API_KEY") as stopped:
        run_driver(
            settings,
            "anthropic",
            strategy="one-shot",
            steps=1,
            tasks=["gelu"],
            run_dir=tmp_path / "run",
        )
    assert stopped.value.exit_code == 2
    assert read_events(tmp_path / "run") == []


def test_an_unavailable_judge_stops_the_run_and_records_nothing(
    tmp_path, driver_loop, model, fake_server
):
    settings = run_settings(tmp_path / "home")
    judge = StubJudge(error=JudgeUnavailable("cannot reach the judge service at http://gpu:1"))
    run_dir = tmp_path / "run"

    async def main():
        async with llm_for(fake_server, "openai") as llm:
            spec = DriveSpec(strategy="one-shot", steps=1, tasks=["gelu"], run_dir=run_dir)
            return await drive(spec, settings, llm, judge=judge)

    with pytest.raises(JudgeUnreachable, match="cannot reach the judge service") as stopped:
        driver_loop.run(main())
    assert stopped.value.exit_code == 3
    assert read_events(run_dir) == []
    folder = step_dir(run_dir, "gelu", 1)
    assert (folder / "prompt.txt").is_file() and not (folder / "step.json").exists()
