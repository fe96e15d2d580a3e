"""The Adapt stage against the fake provider server and the CPU judge: scripted task replies
(valid, invalid Python, duplicates, a crashing reference, a lint failure), then the driver on
the kept tasks with the rule memory on, and the rules it learned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adaexplore_mcp.adapt import (
    LOG_FILE,
    AdaptSpec,
    KnownTasks,
    Rejected,
    adapt,
    parse_reply,
    prompt_for,
    source_hash,
)
from adaexplore_mcp.report import load_run, run_stats
from adaexplore_mcp.tasks import bundled_tasks, get_bundled_task, load_task_file
from tests.adapt.conftest import (
    BROKEN,
    CRASHING,
    GELU_COPY,
    LINT_FAILING,
    RELU_SQUARED,
    RULE,
    SCALED_GELU,
    llm_for,
    reply,
    settings_for,
)
from tests.conftest import run_cli
from tests.llm.fake_providers import Reply


def test_parse_reply_and_duplicates() -> None:
    name, source = parse_reply(f"name: scaled_gelu\n\n```python\n{SCALED_GELU}```")
    assert name == "scaled_gelu" and source == SCALED_GELU
    # no name line: the docstring's first line names it
    assert parse_reply(f"```python\n{RELU_SQUARED}```")[0] == "squared_relu"
    with pytest.raises(Rejected, match="no task in the reply"):
        parse_reply("I would rather not.")
    known = KnownTasks(bundled_tasks())
    with pytest.raises(Rejected, match="the same code as task 'gelu'"):
        known.check("gelu_copy", GELU_COPY)
    with pytest.raises(Rejected, match="a task named 'softmax' exists"):
        known.check("softmax", SCALED_GELU)
    assert source_hash(SCALED_GELU) == source_hash(SCALED_GELU.replace("# ", "#  ") + "\n\n")
    assert source_hash(SCALED_GELU) != source_hash(RELU_SQUARED)


@pytest.mark.parametrize("depth", [2000, 100_000])  # past the recursion limit, the parser's
def test_source_nested_too_deeply_is_hashed_as_text(depth: int) -> None:
    deep = RELU_SQUARED + "\n\ndef _deep():\n    return " + "-" * depth + "1\n"
    assert source_hash(deep) == source_hash(deep + "\n") != source_hash(RELU_SQUARED)


def test_a_reply_past_the_parsers_nesting_limit_has_no_docstring_to_name_it() -> None:
    deep = RELU_SQUARED + "\n_deep = " + "-" * 100_000 + "1\n"
    with pytest.raises(Rejected, match="names no task"):
        parse_reply(f"```python\n{deep}```")


def test_prompt_shows_the_examples_and_the_names_to_avoid() -> None:
    examples = [get_bundled_task("gelu"), get_bundled_task("softmax")]
    prompt = prompt_for(examples, "recombine", ["gelu", "softmax", "layernorm"])
    assert "### gelu" in prompt and "### softmax" in prompt
    assert "Recombine operators" in prompt and "gelu, layernorm, softmax" in prompt
    assert "Mutate one of the tasks" in prompt_for(examples, "mutate", [])


def test_adapt_end_to_end(fake, cpu_judge, loop_thread, tmp_path: Path) -> None:
    pytest.importorskip("adaexplore_mcp.driver.runner", reason="the driver is not installed")
    fake.script(
        reply("scaled_gelu", SCALED_GELU),
        reply("broken_task", BROKEN),
        reply("gelu_copy", GELU_COPY),
        reply("bad_matmul", CRASHING),
        reply("scaled_gelu", RELU_SQUARED),  # a name already taken
        Reply(text="Here is my idea, in words only."),
        reply("tiny_mean", LINT_FAILING),
        reply("relu_squared", RELU_SQUARED),
    )
    home = tmp_path / "home"
    settings = settings_for(home, fake)
    spec = AdaptSpec(
        count=2,
        attempts=10,
        strategy="one-shot",
        steps=1,
        out_dir=home / "adapt" / "tasks",
        run_dir=tmp_path / "run",
        seed=5,
    )
    llm = llm_for(fake)
    result = loop_thread.run(adapt(spec, settings, llm, judge=cpu_judge.judge))
    loop_thread.run(llm.close())

    reasons = {c.name: c.reason for c in result.candidates}
    assert [c.name for c in result.candidates if c.accepted] == ["scaled_gelu", "relu_squared"]
    assert "not a usable task" in reasons["broken_task"]
    assert "the same code as task 'gelu'" in reasons["gelu_copy"]
    assert "reference failed on random inputs" in reasons["bad_matmul"]
    assert "lint (zeros" in reasons["tiny_mean"] or "lint (" in reasons["tiny_mean"]
    assert [c.reason for c in result.candidates if c.name is None] == [
        "no task in the reply: no ```python block defining `class Model`"
    ]
    assert len(result.candidates) == 8 and len([c for c in result.candidates if c.accepted]) == 2
    dropped_name = [c for c in result.candidates if c.reason and "named 'scaled_gelu'" in c.reason]
    assert len(dropped_name) == 1

    # kept tasks are task files; every candidate is logged with its reason
    stored = sorted(Path(p).name for p in result.tasks)
    assert stored == ["relu_squared.py", "scaled_gelu.py"]
    assert load_task_file(result.tasks[0]).source == SCALED_GELU
    logged = (spec.out_dir / LOG_FILE).read_text().splitlines()
    assert len(logged) == 8 and json.loads(logged[1])["name"] == "broken_task"

    # the strategy ran on them with the memory on: the compile error taught a rule
    run = load_run(result.run_dir)
    stats = run_stats([run])
    assert stats.tasks_total == 2 and stats.correct == 1
    assert stats.incorrect_tasks == ["relu_squared"]
    rules = result.rules
    assert rules is not None and rules.new == 1 and rules.activated == 0
    (change,) = rules.rules
    assert change.text == RULE and change.change == "new" and change.support_tasks == 1
    assert change.examples[0].task == "relu_squared"
    assert result.input_tokens > 0


def test_a_second_adapt_run_does_not_repeat_stored_tasks(
    fake, cpu_judge, loop_thread, tmp_path: Path
) -> None:
    out_dir = tmp_path / "tasks"
    out_dir.mkdir()
    (out_dir / "scaled_gelu.py").write_text(SCALED_GELU)
    fake.script(reply("gelu_times_two", SCALED_GELU))
    spec = AdaptSpec(count=1, attempts=1, out_dir=out_dir, run_strategy=False)
    llm = llm_for(fake)
    result = loop_thread.run(
        adapt(spec, settings_for(tmp_path / "home", fake), llm, judge=cpu_judge.judge)
    )
    loop_thread.run(llm.close())
    (candidate,) = result.candidates
    assert not candidate.accepted and "same code as task 'scaled_gelu'" in candidate.reason
    assert result.tasks == [] and result.rules is None
    # the synthesis prompt named the stored task among those to avoid
    assert "scaled_gelu" in json.dumps(fake.requests[0].body)


def test_cli_synthesizes_and_reports(fake, tmp_path: Path) -> None:
    fake.script(reply("scaled_gelu", SCALED_GELU), reply("broken_task", BROKEN))
    done = run_cli(
        "adapt",
        "--provider", "openai", "--model", "gpt-4o", "--base-url", fake.openai_url,
        "--device", "cpu", "--count", "2", "--attempts", "2", "--synthesize-only",
        "--out", str(tmp_path / "tasks"), "--json",
        home=tmp_path / "home",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [c["accepted"] for c in result["candidates"]] == [True, False]
    assert (tmp_path / "tasks" / "scaled_gelu.py").read_text() == SCALED_GELU
    assert "dropped: not a usable task" in " ".join(done.stderr.split())
    bad = run_cli("adapt", "--strategy", "greedy", home=tmp_path / "home")
    assert bad.returncode == 2 and "unknown strategy 'greedy'" in bad.stderr
