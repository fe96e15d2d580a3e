"""The real `adaexplore-mcp serve` over stdio, driven by the SDK's stdio client: tools with
progress, a tool error, a prompt, a resource and cancellation, through JSON-RPC."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.mcp_server.conftest import GELU, GELU_SLOW_START, text

pytestmark = pytest.mark.anyio


def serve_parameters(home: Path, *args: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADAEXPLORE_")}
    env |= {
        "ADAEXPLORE_HOME": str(home),
        "ADAEXPLORE_JUDGE__DEVICE": "cpu",
        "ADAEXPLORE_JUDGE__WORKERS_PER_DEVICE": "1",
        "ADAEXPLORE_SEARCH__P_LARGE": "0",
    }
    return StdioServerParameters(
        command=sys.executable, args=["-m", "adaexplore_mcp.cli", "serve", *args], env=env
    )


async def test_serve_over_stdio(tmp_path: Path) -> None:
    with anyio.fail_after(180):
        async with Client(serve_parameters(tmp_path / "home")) as client:
            assert client.server_info is not None and client.server_info.name == "adaexplore"
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"evaluate_kernel", "select_node", "apply_patch", "best_kernel"} <= tools

            search = await client.call_tool("start_search", {"task": "gelu"})
            sid = search.structured_content["id"]
            phases: list[str] = []

            async def progress(value: float, total: float | None, message: str | None) -> None:
                phases.append(message or "")

            step = await client.call_tool(
                "regenerate", {"search_id": sid, "code": GELU}, progress_callback=progress
            )
            assert step.structured_content["node"]["status"] == "correct", text(step)
            assert any(p.startswith("queued") for p in phases)
            assert any(p.startswith("checking") for p in phases)

            unknown = await client.call_tool("get_tree", {"search_id": "nope"})
            assert unknown.is_error and "no search with id 'nope'" in text(unknown)

            prompt = await client.get_prompt("small_step", {"search_id": sid, "node_id": "1"})
            assert "## The current kernel (node 1)" in prompt.messages[0].content.text
            kernel = await client.read_resource(f"kernel://{sid}/1")
            assert kernel.contents[0].text == GELU

            started = anyio.Event()

            async def compiling(value: float, total: float | None, message: str | None) -> None:
                if message and message.startswith("compiling"):
                    started.set()

            async with anyio.create_task_group() as group:

                async def slow() -> None:
                    await client.call_tool(
                        "regenerate",
                        {"search_id": sid, "code": GELU_SLOW_START},
                        progress_callback=compiling,
                    )

                group.start_soon(slow)
                await started.wait()
                group.cancel_scope.cancel()

            # the cancelled step goes on; sent again, it is joined, not evaluated twice
            after = await client.call_tool(
                "regenerate", {"search_id": sid, "code": GELU_SLOW_START}
            )
            assert after.structured_content["node"]["id"] == 2, text(after)
            tree = await client.call_tool("get_tree", {"search_id": sid})
            assert len(tree.structured_content["nodes"]) == 3
            assert tree.structured_content["steps"] == 2
