"""Every strategy, end to end on the CPU judge, through the official clients against the fake
provider server: the run directory it writes, what its prompts carry, how failures count."""

from __future__ import annotations

import json
import re
from pathlib import Path

from adaexplore_mcp.app import open_app
from adaexplore_mcp.driver import RunConfig, StepRecord, TaskRunSummary
from adaexplore_mcp.mcp_server import Workbench
from adaexplore_mcp.memory import ReasoningBank, SkillMemory
from adaexplore_mcp.rundir import read_events, step_dir
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import get_bundled_task
from tests.llm.fake_providers import Reply
from tests.ops_wording import assert_library_operators_allowed, assert_whole_result_in_triton

from .conftest import GELU, GELU_COMPILE_ERROR, GELU_TORCH, edit, run_settings


def events(run_dir: Path) -> list[StepRecord]:
    return sorted(read_events(run_dir), key=lambda r: (r.task, r.step))


def step_file(run_dir: Path, record: StepRecord, name: str) -> Path:
    return step_dir(run_dir, record.task, record.step) / name


def failures_filed(settings) -> list[tuple[str, str]]:
    memory = SkillMemory(Store(settings.database_path), settings.memory)
    return [(f.task, f.origin) for f in memory.failures() if f.origin in ("mcp", "agent")]


def search_tokens(settings, search_id: str) -> int:
    return Workbench(open_app(settings)).engine.get_search(search_id).usage.tokens


def test_adaexplore_small_and_large_steps_with_every_kind_of_failure(
    tmp_path, run_driver, model, fake_server
):
    settings = run_settings(tmp_path / "home", stream=True)
    # the first request: a rate limit, then a server error, then the answer (all retried)
    fake_server.script(Reply.rate_limited("0"), Reply.error(500))
    model.queue("writer", "I would split the rows across programs and mask the tail.")
    model.queue("tuner", edit("x = x * 2  # not in the kernel", "x = x * 3"))
    model.queue("repair", edit("x = x * 2  # still not in the kernel", "x = x * 3"))
    run_dir = tmp_path / "run"
    result = run_driver(
        settings,
        "anthropic",
        strategy="adaexplore",
        steps=5,
        workers=2,
        tasks=["gelu"],
        run_dir=run_dir,
    )
    records = events(run_dir)
    assert [r.step for r in records] == [1, 2, 3, 4, 5]
    outcomes = [r.outcome for r in records]
    assert outcomes.count("unusable_reply") == 1 and outcomes.count("patch_failed") == 1
    assert outcomes.count("correct") == 3
    unusable = next(r for r in records if r.outcome == "unusable_reply")
    assert "no code block" in unusable.reason and unusable.node_id is None
    failed = next(r for r in records if r.outcome == "patch_failed")
    assert failed.action == "small" and "after one repair round" in failed.reason
    assert "old_str not found" in failed.reason
    assert not step_file(run_dir, failed, "kernel.py").exists()
    reply = step_file(run_dir, failed, "reply.txt").read_text()
    assert "(reviser)" in reply and "(tuner)" in reply and reply.count("=====\n") == 3
    for record in records:
        assert record.rules_in_prompt > 0 and record.input_tokens > 0
        prompt = step_file(run_dir, record, "prompt.txt").read_text()
        assert prompt.startswith("===== call 1 (") and "## Rules learned" in prompt
        assert_whole_result_in_triton(prompt)  # the default operator policy
        if record.outcome == "correct":
            verdict = json.loads(step_file(run_dir, record, "verdict.json").read_text())
            assert verdict["status"] == "correct"
            assert step_file(run_dir, record, "kernel.py").read_text().startswith('"""Triton')
    small = [r for r in records if r.action == "small" and r.outcome == "correct"]
    assert small and all(r.parent_id for r in small)
    kernel = step_file(run_dir, small[0], "kernel.py").read_text()
    assert kernel != GELU and "num_warps=4" in kernel  # the tuner's edit, applied
    assert all(request.streamed for request in fake_server.requests)
    assert result.usage.retries == 2 and result.complete
    usage = json.loads((run_dir / "usage.json").read_text())
    assert usage["retries"] == 2 and usage["cost_usd"] > 0
    assert usage["input_tokens"] >= sum(r.input_tokens for r in records)
    summary = TaskRunSummary.model_validate_json((run_dir / "tasks/gelu/summary.json").read_text())
    assert summary.steps == 5 and summary.correct and summary.best_node_id is not None
    assert summary.input_tokens == sum(r.input_tokens for r in records)
    assert (run_dir / "tasks/gelu/best_kernel.py").is_file()
    # every judged step reported its tokens to the search
    search_id = json.loads((run_dir / "tasks/gelu/task.json").read_text())["search_id"]
    judged = [r for r in records if r.node_id is not None]
    assert search_tokens(settings, search_id) == sum(
        r.input_tokens + r.output_tokens for r in judged
    )


def test_one_shot_takes_one_step_per_task_and_memory_none_stays_out_of_the_memory(
    tmp_path, run_driver, model
):
    settings = run_settings(tmp_path / "home")
    model.queue_kernels("gelu", GELU_COMPILE_ERROR)
    run_dir = tmp_path / "run"
    result = run_driver(
        settings,
        "openai",
        strategy="one-shot",
        memory="none",
        steps=4,
        workers=2,
        tasks=["gelu", "softmax"],
        run_dir=run_dir,
    )
    config = RunConfig.model_validate_json((run_dir / "run.json").read_text())
    assert config.steps == 1 and config.provider == "openai" and config.tasks == ["gelu", "softmax"]
    records = events(run_dir)
    assert [(r.task, r.outcome, r.action) for r in records] == [
        ("gelu", "compile_error", "sample"),
        ("softmax", "correct", "sample"),
    ]
    for record in records:
        assert record.rules_in_prompt == 0 and record.parent_id == 0
        assert "## Rules learned" not in step_file(run_dir, record, "prompt.txt").read_text()
    assert failures_filed(settings) == []  # the compile error was not filed
    assert [s.correct for s in result.summaries] == [False, True]
    assert not (run_dir / "tasks/gelu/best_kernel.py").exists()


def test_best_of_n_with_the_reasoning_bank(tmp_path, run_driver, model, fake_server):
    settings = run_settings(tmp_path / "home")
    bank = ReasoningBank(Store(settings.database_path))
    bank.add(
        get_bundled_task("hardswish_fp16"),
        "LESSON-7: elementwise activations stream one wide masked block per program.",
        solved=True,
        speedup=1.4,
        run="an-earlier-run",
    )
    fake_server.script(Reply.malformed())  # a body cut off: retried
    run_dir = tmp_path / "run"
    run_driver(
        settings,
        "openai",
        strategy="best-of-n",
        memory="reasoning-bank",
        steps=3,
        workers=3,
        tasks=["gelu"],
        run_dir=run_dir,
    )
    records = events(run_dir)
    assert [r.outcome for r in records] == ["correct"] * 3
    assert all(r.parent_id == 0 and r.rules_in_prompt == 0 for r in records)
    for record in records:
        prompt = step_file(run_dir, record, "prompt.txt").read_text()
        assert "## Lessons from similar tasks\n- LESSON-7" in prompt
        assert "## Rules learned" not in prompt
    lessons = [x for x in bank.lessons() if x.run == str(run_dir.resolve())]
    assert [(x.task, x.outcome) for x in lessons] == [("gelu", "solved")]
    assert lessons[0].text.startswith("Elementwise kernels")


def test_adaexplore_prompts_carry_an_ancestors_note_and_what_its_kernel_printed(
    tmp_path, run_driver, model
):
    settings = run_settings(tmp_path / "home")
    printed = "gelu launch: 12.5 us (timed in forward)"
    timed = GELU.replace("        return y\n", f'        print("{printed}")\n        return y\n')
    model.queue_kernels("gelu", timed)
    run_dir = tmp_path / "run"
    run_driver(
        settings, "anthropic", strategy="adaexplore", steps=3, workers=1, tasks=["gelu"],
        run_dir=run_dir,
    )  # fmt: skip
    records = events(run_dir)
    assert [(r.action, r.outcome) for r in records] == [
        ("large", "correct"),
        ("small", "correct"),
        ("small", "correct"),
    ]
    search_id = json.loads((run_dir / "tasks/gelu/task.json").read_text())["search_id"]
    engine = Workbench(open_app(settings)).engine
    # the writer's words about its kernel and the reviser's plan are the steps' notes
    assert engine.get_node(search_id, 1).note == "A row-parallel kernel that masks the tail."
    second = engine.get_node(search_id, records[1].node_id)
    assert second.note == "1. Change num_warps: the block is small for 8 warps."
    # the last step patches a node below node 1 (its own patch, or node 1 once more); either
    # way node 1 is in its chain, with its note and the line its kernel printed
    last = step_file(run_dir, records[2], "prompt.txt").read_text()
    assert records[2].parent_id in (1, second.id)
    # in both the reviser's and the tuner's prompt (the kernel itself holds the print call)
    assert last.count("Note sent with the step: A row-parallel kernel that masks the tail.") == 2
    output = re.findall(r"What the kernel printed \(the end\):\n```\n([^`]*)```", last)
    assert len(output) >= 2
    for block in output:  # printed on every call of forward: shown once, with its count
        assert (
            block.startswith(printed + "\n[the line above printed ") and block.count(printed) == 1
        )
    if records[2].parent_id == second.id:
        assert "Note sent with the step: 1. Change num_warps" in last


def test_refine_continues_from_the_latest_kernel_with_its_feedback(tmp_path, run_driver, model):
    settings = run_settings(tmp_path / "home")
    model.queue_kernels("gelu", GELU_TORCH, GELU_COMPILE_ERROR, GELU)
    run_dir = tmp_path / "run"
    run_driver(
        settings,
        "anthropic",
        strategy="refine",
        steps=3,
        workers=2,  # refine still takes one step of a task at a time
        tasks=["gelu"],
        run_dir=run_dir,
    )
    records = events(run_dir)
    assert [(r.action, r.outcome, r.parent_id, r.node_id) for r in records] == [
        ("sample", "rejected", 0, 1),
        ("refine", "compile_error", 1, 2),
        ("refine", "correct", 2, 3),
    ]
    second = step_file(run_dir, records[1], "prompt.txt").read_text()
    assert "## The kernel (node 1): rejected" in second and "no_triton_kernel" in second
    assert "## What the judge said about it" in second and "## Rules learned" in second
    # the rejection was filed by the driver (add_failure), the compile error by the server
    assert sorted(failures_filed(settings)) == [("gelu", "agent"), ("gelu", "mcp")]


def test_metr_improves_correct_kernels_picked_by_speedup(tmp_path, run_driver, model, fake_server):
    settings = run_settings(tmp_path / "home", max_llm_errors=3)
    fake_server.script(Reply.error(500), Reply.error(500), Reply.error(500))  # retries spent
    model.queue_kernels("gelu", GELU_COMPILE_ERROR)
    run_dir = tmp_path / "run"
    run_driver(
        settings,
        "openai",
        strategy="metr",
        steps=5,
        workers=1,
        tasks=["gelu"],
        run_dir=run_dir,
        seed=11,
    )
    records = events(run_dir)
    assert records[0].outcome == "llm_error" and "500" in records[0].reason
    assert records[1].outcome == "compile_error" and records[1].parent_id == 0
    assert records[2].outcome == "correct" and records[2].parent_id == 0  # nothing correct yet
    correct = {r.node_id for r in records if r.outcome == "correct"}
    for record in records[3:]:
        assert record.action == "sample" and record.parent_id in correct
        prompt = step_file(run_dir, record, "prompt.txt").read_text()
        assert "## What the judge said about it\ncorrect" in prompt


def test_a_run_under_the_mixed_operator_policy_judges_and_records_every_step_under_it(
    tmp_path, run_driver, model
):
    from adaexplore_mcp.judge.policy import Ops
    from adaexplore_mcp.search_engine import SearchEngine
    from tests.judge.mixed import LIBRARY_GEMM_TRITON_EPILOGUE, LINEAR_RELU_TASK

    settings = run_settings(tmp_path / "home")
    task = tmp_path / "linear_relu.py"
    task.write_text(LINEAR_RELU_TASK)
    model.queue_kernels("linear_relu", LIBRARY_GEMM_TRITON_EPILOGUE)
    run_dir = tmp_path / "run"
    result = run_driver(
        settings, "openai", strategy="one-shot", memory="none", steps=1, tasks=[str(task)],
        run_dir=run_dir, ops="mixed",
    )  # fmt: skip
    config = RunConfig.model_validate_json((run_dir / "run.json").read_text())
    assert config.ops is Ops.MIXED
    (summary,) = result.summaries
    assert summary.correct and summary.ops is Ops.MIXED
    (record,) = events(run_dir)
    search = SearchEngine(Store(settings.database_path)).get_search(
        json.loads((run_dir / "tasks/linear_relu/task.json").read_text())["search_id"]
    )
    assert record.outcome == "correct" and search.settings.ops is Ops.MIXED
    # the writer was told what the policy allows: the GEMM may stay in torch
    assert_library_operators_allowed(step_file(run_dir, record, "prompt.txt").read_text())
