"""The driver tells a tool's errors apart by their code, never by the words of the message."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

from adaexplore_mcp.app import open_app
from adaexplore_mcp.driver.tools import (
    BudgetSpent,
    JudgeBusy,
    JudgeDown,
    PatchRefused,
    ToolFailed,
    Tools,
    _classify,
)
from adaexplore_mcp.judge import EvalResult, Status
from adaexplore_mcp.mcp_server import Workbench, build_server
from adaexplore_mcp.search_engine import Edit
from tests.mcp_server.conftest import GELU, StubJudge, make_settings

REWORDED = "words no server version has ever used"


def coded(code: str, message: str = REWORDED) -> CallToolResult:
    return CallToolResult(
        is_error=True,
        content=[TextContent(type="text", text=f"{code}: {message}")],
        structured_content={"error": {"code": code, "message": message}},
    )


def text_only(text: str) -> CallToolResult:
    return CallToolResult(is_error=True, content=[TextContent(type="text", text=text)])


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("queue_full", JudgeBusy),
        ("judge_unavailable", JudgeDown),
        ("judge_failed", JudgeDown),
        ("patch_not_applied", PatchRefused),
        ("no_change", PatchRefused),
        ("budget_spent", BudgetSpent),
        ("unknown_search", ToolFailed),
        ("invalid_arguments", ToolFailed),
    ],
)
def test_the_code_decides_whatever_the_message_says(code: str, kind: type[ToolFailed]) -> None:
    for result in (coded(code), text_only(f"{code}: {REWORDED}")):
        failure = _classify("apply_patch", result)
        assert type(failure) is kind
        assert (
            failure.code == code and failure.message == REWORDED and failure.tool == "apply_patch"
        )


@pytest.mark.parametrize(
    "words",
    [
        "the judge's queue is full (cpu: 256 waiting); Wait a few seconds and call again.",
        "the judge is unavailable: cannot reach the judge service at http://gpu:1",
        "the patch was not applied (no node created, nothing evaluated)",
        "search 'ab12': the steps budget is spent (10 of 10)",
    ],
)
def test_words_without_a_code_classify_as_nothing_in_particular(words: str) -> None:
    failure = _classify("apply_patch", text_only(words))
    assert type(failure) is ToolFailed and failure.code is None and failure.message == words
    # the words under another code: the code wins
    failure = _classify("apply_patch", coded("unknown_node", words))
    assert type(failure) is ToolFailed and failure.code == "unknown_node"


def test_the_structured_code_wins_over_the_text() -> None:
    result = coded("queue_full")
    result.content = [TextContent(type="text", text=f"budget_spent: {REWORDED}")]
    assert type(_classify("select_node", result)) is JudgeBusy


def test_a_bug_or_an_unknown_code_keeps_the_whole_text() -> None:
    bug = _classify("get_task", text_only("Error executing tool get_task"))
    assert type(bug) is ToolFailed and bug.code is None
    assert bug.message == "Error executing tool get_task"
    newer = _classify("get_task", coded("a_code_from_a_newer_server"))
    assert type(newer) is ToolFailed and newer.code is None
    assert newer.message == f"a_code_from_a_newer_server: {REWORDED}"


def test_through_the_server_the_errors_arrive_coded(tmp_path: Path) -> None:
    correct = EvalResult(
        status=Status.CORRECT, message="correct", task="-", task_hash="-", kernel_hash="-"
    )
    bench = Workbench(open_app(make_settings(tmp_path), judge=StubJudge(result=correct)))

    async def main() -> None:
        async with Client(build_server(bench)) as client:
            tools = Tools(client, queue_full_retries=0)
            info = await tools.start_search("gelu", max_steps=1)
            step = await tools.regenerate(info.id, GELU, 0, tokens=0, author="test")
            missing = [Edit(old_str="no such line", new_str="")]
            with pytest.raises(PatchRefused) as refused:
                await tools.apply_patch(info.id, step.node.id, missing, tokens=0, author="test")
            assert refused.value.code == "patch_not_applied"
            assert refused.value.message.startswith("the patch was not applied")
            with pytest.raises(BudgetSpent) as spent:
                await tools.select_node(info.id, "test")
            assert spent.value.code == "budget_spent"
            with pytest.raises(ToolFailed) as unknown:
                await tools.get_node("nope", 0)
            assert type(unknown.value) is ToolFailed and unknown.value.code == "unknown_search"
            assert unknown.value.message.startswith("no search with id 'nope'")

    asyncio.run(main())


def test_a_models_plan_longer_than_a_note_may_be_is_cut_not_refused(tmp_path: Path) -> None:
    correct = EvalResult(
        status=Status.CORRECT, message="correct", task="-", task_hash="-", kernel_hash="-"
    )
    bench = Workbench(open_app(make_settings(tmp_path), judge=StubJudge(result=correct)))
    plan = "1. unroll the loop; " * 400  # 8,000 characters: twice what a note may hold

    async def main() -> None:
        async with Client(build_server(bench)) as client:
            tools = Tools(client, queue_full_retries=0)
            info = await tools.start_search("gelu", max_steps=5)
            step = await tools.regenerate(info.id, GELU, 0, tokens=0, author="t", note=plan)
            node = await tools.get_node(info.id, step.node.id)
            assert len(node.note) == 4000 and node.note.endswith("…")
            assert plan.startswith(node.note[:-1])
            edit = [Edit(old_str="num_warps=8", new_str="num_warps=4")]
            patched = await tools.apply_patch(
                info.id, step.node.id, edit, tokens=0, author="t", note="  "
            )
            assert (await tools.get_node(info.id, patched.node.id)).note is None

    asyncio.run(main())
