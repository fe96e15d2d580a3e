"""Errors an agent cannot cause but must be told about: an unreachable judge, a full queue, a
bug; and the server's lifetime (the judge starts on the first evaluation and stops with the
transport)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from mcp import Client

from adaexplore_mcp.config import McpSettings, RemoteJudgeSettings, Settings
from adaexplore_mcp.judge import EvalResult, Mismatch, QueueFull, Status
from adaexplore_mcp.mcp_server import Workbench, build_server
from tests.mcp_server.conftest import GELU, StubJudge, make_settings, text

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_an_unreachable_judge_is_a_tool_error(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    remote = RemoteJudgeSettings(url=url, retries=0, connect_timeout_s=2)
    bench = Workbench(make_settings(tmp_path, remote=remote))
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
    bench = Workbench(make_settings(tmp_path), judge=judge)
    async with Client(build_server(bench)) as client:
        result = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU})
        assert result.is_error and "queue is full" in text(result)
        assert "Wait a few seconds and call again" in text(result)


async def test_a_bug_is_reported_without_its_details_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    bench = Workbench(make_settings(tmp_path), judge=StubJudge(RuntimeError("secret detail")))
    async with Client(build_server(bench)) as client:
        result = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU})
        assert result.is_error and text(result) == "Error executing tool evaluate_kernel"
        assert not (await client.call_tool("list_tasks", {})).is_error


async def test_the_judge_starts_lazily_and_stops_with_the_transport(tmp_path: Path) -> None:
    judge = StubJudge(QueueFull("full"))
    bench = Workbench(make_settings(tmp_path), judge=judge)
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
    bench = Workbench(make_settings(tmp_path, mcp=mcp), judge=StubJudge(result=wrong))
    async with Client(build_server(bench)) as client:
        result = await client.call_tool("evaluate_kernel", {"task": "gelu", "code": GELU})
        assert result.structured_content["status"] == "incorrect"
        assert result.structured_content["memory"]["outcome"] == "no_rule"
    failure = bench.memory.failures(limit=1)[0]
    assert failure.task == "gelu" and failure.origin == "mcp"
    assert "wrong values" in failure.error
