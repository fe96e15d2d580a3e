"""Every tool's listing, and the task, judge and memory tools through an in-memory client."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from adaexplore_mcp.mcp_server import Workbench
from adaexplore_mcp.memory import RuleStatus
from adaexplore_mcp.tasks import get_bundled_task
from tests.mcp_server.conftest import GELU, GELU_COMPILE_ERROR, text

pytestmark = pytest.mark.anyio

TOOLS = {
    "list_tasks",
    "get_task",
    "evaluate_kernel",
    "get_rules",
    "add_failure",
    "start_search",
    "list_searches",
    "select_node",
    "apply_patch",
    "regenerate",
    "release",
    "get_tree",
    "get_node",
    "best_kernel",
    "fork",
    "profile_kernel",
}
READ_ONLY = {
    "list_tasks",
    "get_task",
    "get_rules",
    "list_searches",
    "get_tree",
    "get_node",
    "profile_kernel",
}


async def test_every_tool_is_described_typed_and_annotated(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 80, name
        assert tool.output_schema and tool.output_schema["type"] == "object", name
        hints = tool.annotations
        assert hints is not None and hints.title, name
        for hint in ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"):
            assert getattr(hints, hint) is not None, (name, hint)
        assert hints.read_only_hint is (name in READ_ONLY), name
        assert hints.destructive_hint is False and hints.open_world_hint is False, name
    # bounds reach the schema the client's model reads
    patch = tools["apply_patch"].input_schema["properties"]
    assert patch["node_id"]["minimum"] == 0
    assert patch["patches"]["minItems"] == 1
    assert "KernelBench" in tools["get_task"].input_schema["properties"]["task"]["description"]


async def test_list_tasks(client: Client) -> None:
    listed = (await client.call_tool("list_tasks", {})).structured_content
    names = {task["name"] for task in listed["tasks"]}
    assert {"gelu", "softmax", "attention_block"} <= names and len(names) == 25
    assert next(t for t in listed["tasks"] if t["name"] == "gelu")["has_solution"] is True
    level1 = (await client.call_tool("list_tasks", {"level": 1})).structured_content
    assert {task["level"] for task in level1["tasks"]} == {1}
    bad = await client.call_tool("list_tasks", {"level": 7})
    assert bad.is_error and "less than or equal to 3" in text(bad)


async def test_get_task_by_name_and_by_path(client: Client, tmp_path: Path) -> None:
    detail = (await client.call_tool("get_task", {"task": "gelu"})).structured_content
    assert "class Model" in detail["source"] and detail["has_solution"]
    assert {v["role"] for v in detail["variants"]} >= {"benchmark", "small", "odd"}
    copy = tmp_path / "my_gelu.py"
    copy.write_text(get_bundled_task("gelu").source)
    by_path = (await client.call_tool("get_task", {"task": str(copy)})).structured_content
    assert by_path["name"] == "my_gelu" and by_path["path"] == str(copy)
    assert by_path["has_solution"] is False


async def test_get_task_errors_say_what_to_do(client: Client, tmp_path: Path) -> None:
    typo = await client.call_tool("get_task", {"task": "softmx"})
    assert typo.is_error and "did you mean 'softmax'" in text(typo) and "list_tasks" in text(typo)
    missing = await client.call_tool("get_task", {"task": str(tmp_path / "nope.py")})
    assert missing.is_error and "no such file" in text(missing)
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\n")
    invalid = await client.call_tool("get_task", {"task": str(broken)})
    assert invalid.is_error and "Model" in text(invalid)
    empty = await client.call_tool("get_task", {"task": ""})
    assert empty.is_error and "at least 1 character" in text(empty)


async def test_evaluate_a_correct_kernel_with_progress(client: Client) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    result = await client.call_tool(
        "evaluate_kernel", {"task": "gelu", "code": GELU}, progress_callback=progress
    )
    evaluation = result.structured_content
    assert not result.is_error and evaluation["status"] == "correct", evaluation["message"]
    assert evaluation["memory"] is None and evaluation["environment"]["interpreter"]
    values = [value for value, _, _ in seen]
    assert values == sorted(set(values)) and values[0] == 0  # at once, before the judge
    messages = " ".join(message or "" for _, _, message in seen)
    assert "queued" in messages and "compiling" in messages and "checking" in messages
    assert all(total == 5 for _, total, _ in seen)


async def test_a_compile_error_is_recorded_in_the_memory(client: Client, bench: Workbench) -> None:
    result = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU_COMPILE_ERROR})
    evaluation = result.structured_content
    assert not result.is_error and evaluation["status"] == "compile_error"
    memory = evaluation["memory"]
    assert memory is not None and memory["outcome"] in {"clustered", "merged", "new_rule"}
    assert "power of two" in memory["rule"]["text"]
    failure = bench.memory.failures(limit=1)[0]
    assert failure.origin == "mcp" and failure.gpu_arch == "interpreter"
    assert failure.task == "gelu" and failure.triton
    again = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU_COMPILE_ERROR})
    assert again.structured_content["memory"]["outcome"] == "duplicate"


async def test_evaluate_under_a_precision_policy(client: Client) -> None:
    result = await client.call_tool(
        "evaluate_kernel", {"task": "gelu", "code": GELU, "precision": "legacy"}
    )
    evaluation = result.structured_content
    assert evaluation["status"] == "correct" and evaluation["precision"] == "legacy"
    assert evaluation["message"].startswith("[legacy precision]")
    bad = await client.call_tool(
        "evaluate_kernel", {"task": "gelu", "code": GELU, "precision": "fast"}
    )
    assert bad.is_error and "precision" in text(bad)


async def test_evaluate_under_the_mixed_operator_policy(client: Client, tmp_path: Path) -> None:
    from tests.judge.mixed import LIBRARY_GEMM_TRITON_EPILOGUE, LINEAR_RELU_TASK

    task = tmp_path / "linear_relu.py"
    task.write_text(LINEAR_RELU_TASK)
    code = LIBRARY_GEMM_TRITON_EPILOGUE
    mixed = await client.call_tool(
        "evaluate_kernel", {"task": str(task), "code": code, "ops": "mixed"}
    )
    evaluation = mixed.structured_content
    assert evaluation["status"] == "correct", evaluation["message"]
    assert evaluation["ops"] == "mixed" and evaluation["message"].startswith("[mixed ops]")
    assert evaluation["work_split"]["library_ops"] == {"mm": 1}
    assert 0 < evaluation["work_split"]["triton_share"] < 1
    default = await client.call_tool("evaluate_kernel", {"task": str(task), "code": code})
    assert default.structured_content["ops"] == "triton"
    assert default.structured_content["integrity"][0]["check"] == "torch_fallback"
    bad = await client.call_tool("evaluate_kernel", {"task": str(task), "code": code, "ops": "x"})
    assert bad.is_error and "ops" in text(bad)


async def test_evaluate_rejects_bad_arguments(client: Client) -> None:
    empty = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": ""})
    assert empty.is_error and "code" in text(empty)
    zero = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU, "timeout_s": 0})
    assert zero.is_error and "timeout_s" in text(zero)
    unknown = await client.call_tool("evaluate_kernel", {"task": "gelux", "code": GELU})
    assert unknown.is_error and "did you mean 'gelu'" in text(unknown)


async def test_get_rules_ranks_by_query(client: Client) -> None:
    answer = (await client.call_tool("get_rules", {})).structured_content
    assert answer["active_total"] >= 20 and answer["rules"]
    ranked = (
        await client.call_tool("get_rules", {"query": "tl.arange power of two", "limit": 3})
    ).structured_content
    assert len(ranked["rules"]) <= 3 and "power of two" in ranked["rules"][0]["text"]
    assert ranked["rules"][0]["score"] > 0
    bad = await client.call_tool("get_rules", {"limit": 0})
    assert bad.is_error


async def test_add_failure_with_a_rule(client: Client, bench: Workbench) -> None:
    rule = "You cannot index a tl.tensor with a Python list inside a @triton.jit kernel."
    answer = await client.call_tool(
        "add_failure",
        {
            "task": "softmax",
            "code": "x = tl.load(p)[[0, 1]]",
            "error": "CompilationError: unsupported tensor index: list",
            "rule": rule,
        },
    )
    outcome = answer.structured_content
    assert not answer.is_error and outcome["outcome"] == "new_rule"
    assert outcome["rule"]["text"] == rule and outcome["rule"]["status"] == "candidate"
    assert any(r.text == rule for r in bench.memory.rules([RuleStatus.CANDIDATE]))


async def test_add_failure_refuses_a_bad_rule_and_explains_the_format(client: Client) -> None:
    answer = await client.call_tool(
        "add_failure",
        {"task": "softmax", "code": "pass", "error": "boom", "rule": "Never use lists."},
    )
    assert answer.is_error
    message = text(answer)
    assert "starting exactly 'You cannot'" in message and "Nothing was recorded" in message
    unknown = await client.call_tool(
        "add_failure", {"task": "no_such_task", "code": "pass", "error": "boom"}
    )
    assert unknown.is_error and "list_tasks" in text(unknown)
