"""Errors an agent cannot cause but must be told about: an unreachable judge, a full queue, a
bug; the code every error the server reports on purpose carries, through tools, resources and
prompts; and the server's lifetime (the judge starts on the first evaluation and stops with the
transport)."""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.types import INVALID_PARAMS, CallToolResult

from adaexplore_mcp.app import open_app
from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge import (
    EvalResult,
    JudgeError,
    JudgeUnavailable,
    Mismatch,
    QueueFull,
    Status,
)
from adaexplore_mcp.judge.settings import RemoteJudgeSettings
from adaexplore_mcp.mcp_server import ErrorCode, ErrorInfo, ErrorPayload, Workbench, build_server
from adaexplore_mcp.mcp_server.errors import error_of
from adaexplore_mcp.mcp_server.settings import McpSettings
from adaexplore_mcp.memory import RuleTextError, UnknownRule
from adaexplore_mcp.prompts import PromptNotFound
from adaexplore_mcp.search_engine import (
    BudgetExhausted,
    EditFailure,
    NoChange,
    PatchError,
    SearchError,
)
from adaexplore_mcp.tasks import TaskError
from tests.mcp_server.conftest import GELU, StubJudge, make_settings, text

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_an_unreachable_judge_is_a_tool_error(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    remote = RemoteJudgeSettings(url=url, retries=0, connect_timeout_s=2)
    bench = Workbench(open_app(make_settings(tmp_path, remote=remote)))
    async with Client(build_server(bench)) as client:
        listed = await client.call_tool("list_tasks", {})
        assert not listed.is_error  # the server answers without any judge
        health = bench.health()
        assert health.judge == "not started" and health.judge_url == url
        result = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU})
        assert result.is_error
        assert f"cannot reach the judge service at {url}" in text(result)
        assert "--judge URL" in text(result) and "Nothing was evaluated" in text(result)
        sid = (await client.call_tool("start_search", {"task": "gelu"})).structured_content["id"]
        step = await client.call_tool("regenerate", {"search_id": sid, "code": GELU})
        assert step.is_error and "judge is unavailable" in text(step)
        tree = (await client.call_tool("get_tree", {"search_id": sid})).structured_content
        assert len(tree["nodes"]) == 1 and tree["in_flight"] == 0


async def test_a_full_queue_says_to_retry(tmp_path: Path) -> None:
    judge = StubJudge(QueueFull("cpu: 256 evaluations are waiting"))
    bench = Workbench(open_app(make_settings(tmp_path), judge=judge))
    async with Client(build_server(bench)) as client:
        result = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU})
        assert result.is_error and "queue is full" in text(result)
        assert "Wait a few seconds and call again" in text(result)


async def test_a_bug_is_reported_without_its_details_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    bench = Workbench(
        open_app(make_settings(tmp_path), judge=StubJudge(RuntimeError("secret detail")))
    )
    async with Client(build_server(bench)) as client:
        result = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU})
        assert result.is_error and text(result) == "Error executing tool evaluate_kernel"
        assert not (await client.call_tool("list_tasks", {})).is_error


async def test_the_judge_starts_lazily_and_stops_with_the_transport(tmp_path: Path) -> None:
    judge = StubJudge(QueueFull("full"))
    bench = Workbench(open_app(make_settings(tmp_path), judge=judge))
    async with Client(build_server(bench)) as client:
        await client.call_tool("list_tasks", {})
        await client.call_tool("get_rules", {})
        assert judge.started == 0
        await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU})
        await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU})
        assert judge.started == 1 and bench.health().judge == ["stub"]
    assert judge.closed == 1 and not bench.judge.started
    # a workbench owned by its caller outlives the connection
    async with Client(build_server(bench, close_on_shutdown=False)) as client:
        await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU})
    assert judge.started == 2 and judge.closed == 1
    await bench.close()
    assert judge.closed == 2


def test_mcp_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADAEXPLORE_MCP__PORT", "9123")
    monkeypatch.setenv("ADAEXPLORE_MCP__RECORD_FAILURES", '["compile_error", "incorrect"]')
    settings = Settings()
    assert settings.mcp.port == 9123 and settings.mcp.record_failures == [
        "compile_error",
        "incorrect",
    ]
    assert McpSettings().transport == "stdio" and McpSettings().host == "127.0.0.1"


async def test_the_verdicts_recorded_in_the_memory_are_configurable(tmp_path: Path) -> None:
    wrong = EvalResult(
        status=Status.INCORRECT,
        message="wrong values: 12 of 4096 elements differ",
        task="-",
        task_hash="-",
        kernel_hash="-",
    )
    wrong.correctness.mismatch = Mismatch(variant="main", trial=0, output_index=0, kind="values")
    mcp = McpSettings(record_failures=["incorrect"])
    bench = Workbench(open_app(make_settings(tmp_path, mcp=mcp), judge=StubJudge(result=wrong)))
    async with Client(build_server(bench)) as client:
        result = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU})
        assert result.structured_content["status"] == "incorrect"
        assert result.structured_content["memory"]["outcome"] == "no_rule"
    failure = bench.memory.failures(limit=1)[0]
    assert failure.task == "gelu" and failure.origin == "mcp"
    assert "wrong values" in failure.error


# -- error codes ------------------------------------------------------------------------------

CORRECT = EvalResult(
    status=Status.CORRECT, message="correct", task="-", task_hash="-", kernel_hash="-"
)
MISSING = "no such line in the kernel"
SAME = "class ModelNew(nn.Module):"  # once in GELU


@pytest.fixture(scope="module")
async def coded_client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    """A server whose judge calls every kernel correct at once: the errors, not the verdicts,
    are under test here."""
    home = tmp_path_factory.mktemp("coded-home")
    bench = Workbench(open_app(make_settings(home), judge=StubJudge(result=CORRECT)))
    async with Client(build_server(bench)) as connected:
        yield connected


@pytest.fixture(scope="module")
async def sid(coded_client: Client) -> str:
    """A search whose node 1 holds a kernel."""
    started = await coded_client.call_tool("start_search", {"task": "gelu"})
    search_id = started.structured_content["id"]
    step = await coded_client.call_tool("regenerate", {"search_id": search_id, "code": GELU})
    assert step.structured_content["node"]["id"] == 1, text(step)
    return search_id


def coded(result: CallToolResult) -> ErrorInfo:
    """The error a tool result carries, checked to say the same in its structured content and
    in its text, without the prefix the SDK reserves for bugs."""
    assert result.is_error
    assert result.structured_content is not None, text(result)
    error = ErrorPayload.model_validate(result.structured_content).error
    assert text(result) == f"{error.code}: {error.message}"
    assert not text(result).startswith("Error executing tool")
    return error


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("get_task", {"task": "softmx"}, "invalid_task"),
        ("start_search", {"task": "/no/such/task.py"}, "invalid_task"),
        ("get_tree", {"search_id": "nope"}, "unknown_search"),
        ("get_node", {"search_id": "{sid}", "node_id": 9}, "unknown_node"),
        ("release", {"search_id": "{sid}", "node_id": 9}, "unknown_node"),
        (
            "apply_patch",
            {"search_id": "{sid}", "node_id": 0, "patches": [{"old_str": "a", "new_str": "b"}]},
            "invalid_step",
        ),
        ("regenerate", {"search_id": "{sid}", "code": "  \n"}, "invalid_step"),
        (
            "apply_patch",
            {"search_id": "{sid}", "node_id": 1, "patches": [{"old_str": MISSING, "new_str": ""}]},
            "patch_not_applied",
        ),
        (
            "apply_patch",
            {"search_id": "{sid}", "node_id": 1, "patches": [{"old_str": SAME, "new_str": SAME}]},
            "no_change",
        ),
        (
            "add_failure",
            {"task": "gelu", "code": "pass", "error": "boom", "rule": "Never use lists."},
            "invalid_rule",
        ),
        # the SDK checks these against the input schema before the tool runs
        ("get_node", {"search_id": "{sid}", "node_id": -1}, "invalid_arguments"),
        ("get_task", {}, "invalid_arguments"),
        ("apply_patch", {"search_id": "{sid}", "node_id": 1, "patches": []}, "invalid_arguments"),
        ("no_such_tool", {}, "unknown_tool"),
    ],
)
async def test_a_tool_error_carries_its_code(
    coded_client: Client, sid: str, tool: str, arguments: dict[str, Any], code: str
) -> None:
    filled = {k: v.format(sid=sid) if isinstance(v, str) else v for k, v in arguments.items()}
    error = coded(await coded_client.call_tool(tool, filled))
    assert error.code == code and error.message


async def test_invalid_arguments_name_the_field_and_the_bound(coded_client: Client) -> None:
    error = coded(await coded_client.call_tool("list_tasks", {"level": 7}))
    assert error.code == "invalid_arguments"
    assert error.message == "level: Input should be less than or equal to 3"


async def test_a_spent_budget_is_coded(coded_client: Client) -> None:
    started = await coded_client.call_tool("start_search", {"task": "gelu", "max_steps": 1})
    search_id = started.structured_content["id"]
    await coded_client.call_tool("regenerate", {"search_id": search_id, "code": GELU})
    error = coded(await coded_client.call_tool("select_node", {"search_id": search_id}))
    assert error.code == "budget_spent" and "best_kernel" in error.message


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        (QueueFull("cpu: 256 evaluations are waiting"), "queue_full"),
        (JudgeUnavailable("cannot reach the judge service at http://gpu:1"), "judge_unavailable"),
        (JudgeError("the judge's check job ended with a crash"), "judge_failed"),
    ],
)
async def test_judge_errors_carry_their_code(tmp_path: Path, failure: Exception, code: str) -> None:
    bench = Workbench(open_app(make_settings(tmp_path), judge=StubJudge(failure)))
    async with Client(build_server(bench)) as client:
        result = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU})
        error = coded(result)
        assert error.code == code and str(failure) in error.message


def test_every_domain_exception_has_one_code() -> None:
    """The exceptions no client call reaches in these tests (a rule deleted under a call, a
    template missing from the package, an engine without a judge) are coded all the same."""
    cases = {
        UnknownRule("no rule with id 4"): "unknown_rule",
        PromptNotFound("no prompt named 'x'"): "unknown_prompt",
        SearchError("this search engine has no judge"): "search_error",
        PatchError([EditFailure(index=0, reason="empty", count=0)]): "patch_not_applied",
        NoChange(): "no_change",
        BudgetExhausted("ab12", "steps", "1 of 1"): "budget_spent",
        TaskError("no such file", path="/x.py"): "invalid_task",
        RuleTextError("the rule is empty"): "invalid_rule",
    }
    for exc, code in cases.items():
        error = error_of(exc)
        assert error is not None and error.code == code, exc
        assert str(exc) in error.message
    assert error_of(RuntimeError("a bug")) is None and error_of(KeyError("x")) is None


def test_every_code_is_documented() -> None:
    """docs/mcp.md's table of error codes has one row per code, and no other rows."""
    doc = (Path(__file__).parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    section = doc.split("### Error codes\n", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \|", section, re.M)
    assert sorted(rows) == sorted(ErrorCode) and len(rows) == len(set(rows))


async def test_a_bug_gives_the_generic_text_and_no_traceback(tmp_path: Path) -> None:
    bench = Workbench(open_app(make_settings(tmp_path), judge=StubJudge(KeyError("secret detail"))))
    async with Client(build_server(bench)) as client:
        result = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU})
    assert result.is_error and result.structured_content is None
    assert [block.text for block in result.content] == ["Error executing tool evaluate_kernel"]


@pytest.mark.parametrize(
    ("uri", "code", "protocol"),
    [
        ("search://nope/tree", "unknown_search", INVALID_PARAMS),
        ("kernel://{sid}/9", "unknown_node", INVALID_PARAMS),
        ("kernel://{sid}/x", "invalid_arguments", INVALID_PARAMS),
        ("kernel://{sid}/0", "no_kernel", INVALID_PARAMS),
        ("task://softmx", "invalid_task", INVALID_PARAMS),
        ("nope://x", "unknown_resource", INVALID_PARAMS),
    ],
)
async def test_a_resource_error_carries_its_code(
    coded_client: Client, sid: str, uri: str, code: str, protocol: int
) -> None:
    with pytest.raises(MCPError) as caught:
        await coded_client.read_resource(uri.format(sid=sid))
    error = ErrorPayload.model_validate(caught.value.data).error
    assert caught.value.code == protocol and error.code == code
    assert caught.value.message == f"{code}: {error.message}"
    assert caught.value.data["uri"] == uri.format(sid=sid)


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("small_step", {"search_id": "nope", "node_id": "1"}, "unknown_search"),
        ("small_step", {"search_id": "{sid}", "node_id": "7"}, "unknown_node"),
        ("small_step", {"search_id": "{sid}", "node_id": "0"}, "invalid_step"),
        ("small_step", {"search_id": "{sid}", "node_id": "one"}, "invalid_arguments"),
        ("large_step", {"search_id": "{sid}", "answer_with": "json"}, "invalid_arguments"),
        ("small_step", {"search_id": "{sid}"}, "invalid_arguments"),
        ("no_such_prompt", {}, "unknown_prompt"),
    ],
)
async def test_a_prompt_error_carries_its_code(
    coded_client: Client, sid: str, name: str, arguments: dict[str, str], code: str
) -> None:
    filled = {key: value.format(sid=sid) for key, value in arguments.items()}
    with pytest.raises(MCPError) as caught:
        await coded_client.get_prompt(name, filled)
    error = ErrorPayload.model_validate(caught.value.data).error
    assert caught.value.code == INVALID_PARAMS and error.code == code
    assert caught.value.message == f"{code}: {error.message}"
