"""Answer sizes against the budgets docs/mcp.md states, over a 10-step search driven through the
official client on both transports: the real `adaexplore-mcp serve` over stdio, and streamable
HTTP. No step answer carries the kernel that was sent."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from adaexplore_mcp.mcp_server.answers import CHARS_PER_TOKEN
from tests.mcp_server.conftest import GELU, text
from tests.mcp_server.test_http import Served, serve_in_thread
from tests.mcp_server.test_stdio import serve_parameters

# docs/mcp.md, "What an answer costs"
STEP_TOKENS = 1500
SELECT_DEFAULT_TOKENS = 4000
LIST_TOKENS = 3000


def tokens(result: object) -> int:
    return -(-len(text(result)) // CHARS_PER_TOKEN)


async def ten_steps(client: Client) -> None:
    started = await client.call_tool("start_search", {"task": "gelu", "max_steps": 10})
    sid = started.structured_content["id"]
    for step in range(10):
        selected = await client.call_tool("select_node", {"search_id": sid})
        assert not selected.is_error, text(selected)
        selection = selected.structured_content
        assert tokens(selected) <= max(
            SELECT_DEFAULT_TOKENS, selection["node"]["code_chars"] // CHARS_PER_TOKEN + 1000
        )
        assert selection["context"]["budget_tokens"] == SELECT_DEFAULT_TOKENS
        node = selection["node"]
        marker = f"# step {step}: a line sent once"
        if selection["action"] == "small":
            first = node["code"].splitlines()[0]
            answer = await client.call_tool(
                "apply_patch",
                {
                    "search_id": sid,
                    "node_id": node["id"],
                    "patches": [{"old_str": first, "new_str": f"{first}\n{marker}"}],
                },
            )
        else:
            answer = await client.call_tool(
                "regenerate", {"search_id": sid, "node_id": node["id"], "code": f"{marker}\n{GELU}"}
            )
        assert not answer.is_error, text(answer)
        assert tokens(answer) <= STEP_TOKENS
        assert marker not in text(answer) and "tl.program_id" not in text(answer)
        assert answer.structured_content["next_call"]["tool"] in ("select_node", "best_kernel")
    for tool, arguments in (
        ("get_tree", {"search_id": sid}),
        ("list_searches", {}),
        ("get_rules", {"query": GELU}),
        ("list_tasks", {}),
    ):
        listed = await client.call_tool(tool, arguments)
        assert not listed.is_error and tokens(listed) <= LIST_TOKENS, (tool, tokens(listed))


@pytest.mark.anyio
async def test_budgets_over_stdio(tmp_path: Path) -> None:
    async with Client(serve_parameters(tmp_path / "home")) as client:
        await ten_steps(client)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve_in_thread(tmp_path_factory.mktemp("budgets"), None)


def test_budgets_over_http(served: Served) -> None:
    async def run() -> None:
        async with (
            httpx2.AsyncClient(timeout=120) as http,
            Client(streamable_http_client(served.url, http_client=http)) as client,
        ):
            await ten_steps(client)

    asyncio.run(run())
