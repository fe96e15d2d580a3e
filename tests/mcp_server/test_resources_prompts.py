"""Resources and prompts through an in-memory client, and their errors."""

from __future__ import annotations

import json

import pytest
from mcp import Client, MCPError

from adaexplore_mcp.mcp_server import Workbench
from adaexplore_mcp.prompts import render
from adaexplore_mcp.search_engine import Action
from tests.mcp_server.conftest import GELU, GELU_COMPILE_ERROR
from tests.ops_wording import assert_library_operators_allowed, assert_whole_result_in_triton

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def search(client: Client) -> str:
    """A search with a correct kernel (node 1) and a broken patch of it (node 2)."""
    sid = (await client.call_tool("start_search", {"task": "gelu"})).structured_content["id"]
    await client.call_tool("regenerate", {"search_id": sid, "code": GELU})
    patch = {"old_str": "tl.arange(0, BLOCK_SIZE)", "new_str": "tl.arange(0, 1000)"}
    await client.call_tool("apply_patch", {"search_id": sid, "node_id": 1, "patches": [patch]})
    return sid


async def read(client: Client, uri: str) -> str:
    return (await client.read_resource(uri)).contents[0].text


async def test_resources_are_listed(client: Client) -> None:
    static = {r.uri for r in (await client.list_resources()).resources}
    templates = {
        t.uri_template for t in (await client.list_resource_templates()).resource_templates
    }
    assert static == {"rules://active"}
    assert templates == {
        "search://{search_id}/tree",
        "kernel://{search_id}/{node_id}",
        "task://{name}",
    }


async def test_read_every_resource(client: Client, search: str, bench: Workbench) -> None:
    rules = await read(client, "rules://active")
    active = bench.memory.get_rules(limit=500).active_total
    assert len(rules.splitlines()) == active and rules.startswith("- You cannot")
    tree = json.loads(await read(client, f"search://{search}/tree"))
    assert [node["id"] for node in tree["nodes"]] == [0, 1, 2]
    assert await read(client, f"kernel://{search}/1") == GELU
    assert await read(client, f"kernel://{search}/2") == GELU_COMPILE_ERROR
    assert "class Model(nn.Module)" in await read(client, "task://gelu")


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        ("search://nope/tree", "no search with id 'nope'"),
        ("kernel://nope/1", "no search with id 'nope'"),
        ("kernel://{sid}/9", "numbered 0 (the root) to 2"),
        ("kernel://{sid}/x", "node ids are numbers"),
        ("kernel://{sid}/0", "is the root"),
        ("task://softmx", "did you mean 'softmax'"),
    ],
)
async def test_resource_errors(client: Client, search: str, uri: str, words: str) -> None:
    with pytest.raises(MCPError) as caught:
        await client.read_resource(uri.format(sid=search))
    assert words in caught.value.message


async def test_prompts_are_listed_with_their_arguments(client: Client) -> None:
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(prompts) == {"small_step", "large_step", "extract_rule"}
    required = {
        name: {a.name for a in p.arguments or [] if a.required} for name, p in prompts.items()
    }
    assert required == {
        "small_step": {"search_id", "node_id"},
        "large_step": {"search_id"},
        "extract_rule": {"task", "code", "error"},
    }
    assert all(p.description for p in prompts.values())


async def prompt(client: Client, name: str, **arguments: str) -> str:
    result = await client.get_prompt(name, arguments)
    assert len(result.messages) == 1 and result.messages[0].role == "user"
    return result.messages[0].content.text


async def test_small_step_prompt(client: Client, search: str, bench: Workbench) -> None:
    text = await prompt(client, "small_step", search_id=search, node_id="2")
    assert "## The task: gelu" in text and "class Model(nn.Module)" in text
    assert GELU_COMPILE_ERROR.strip() in text
    assert "### Node 1 (a new kernel): correct" in text
    assert "### Node 2 (a patch of the node before): compile_error" in text
    assert "<old_str>\ntl.arange(0, BLOCK_SIZE)\n</old_str>" in text
    assert f'apply_patch` tool with search_id="{search}", node_id=2' in text
    rules = bench.memory.get_rules(query=GELU_COMPILE_ERROR, task="gelu").rules
    assert f"- {rules[0].text}" in text
    # the driver renders the same template with the same variables
    engine = bench.engine
    memory, _ = engine.step_context(search, 2, Action.SMALL)
    same = bench.prompts.small_step(search, 2)
    assert same == text and [m.node_id for m in memory] == [1, 2]
    plain = await prompt(client, "small_step", search_id=search, node_id="2", answer_with="text")
    assert "<plan>" in plain and "apply_patch" not in plain


async def test_large_step_prompt(client: Client, search: str) -> None:
    text = await prompt(client, "large_step", search_id=search)
    assert "### Kernel from node 1: correct (speed not measured)" in text
    assert GELU.strip() in text and "structurally different" in text
    assert f'regenerate` tool with search_id="{search}", node_id=0' in text
    plain = await prompt(client, "large_step", search_id=search, node_id="1", answer_with="text")
    assert "```python block" in plain and "regenerate" not in plain


async def test_large_step_prompt_without_a_correct_kernel(client: Client) -> None:
    sid = (await client.call_tool("start_search", {"task": "softmax"})).structured_content["id"]
    text = await prompt(client, "large_step", search_id=sid, node_id="0")
    assert "No correct kernel exists yet" in text and "## The task: softmax" in text


async def test_step_prompts_follow_the_searchs_operator_policy(client: Client, search: str) -> None:
    # the module's search runs under the default policy: the whole result in Triton
    assert_whole_result_in_triton(await prompt(client, "large_step", search_id=search))
    assert_whole_result_in_triton(await prompt(client, "small_step", search_id=search, node_id="1"))
    started = await client.call_tool("start_search", {"task": "gelu", "ops": "mixed"})
    mixed = started.structured_content["id"]
    await client.call_tool("regenerate", {"search_id": mixed, "code": GELU})
    for answer_with in ("tool", "text"):
        large = await prompt(client, "large_step", search_id=mixed, answer_with=answer_with)
        assert_library_operators_allowed(large)
        small = await prompt(
            client, "small_step", search_id=mixed, node_id="1", answer_with=answer_with
        )
        assert_library_operators_allowed(small)


async def test_extract_rule_prompt_is_the_distillers(client: Client) -> None:
    text = await prompt(
        client, "extract_rule", task="gelu", code="k = 1", error="ValueError: bad", error_type="X"
    )
    assert "You cannot" in text and "Error (X):\nValueError: bad" in text
    assert text == render(
        "extract_rule",
        failures=[
            {
                "task": "gelu",
                "code": "k = 1",
                "error": "ValueError: bad",
                "error_type": "X",
                "environment": None,
            }
        ],
    )


@pytest.mark.parametrize(
    ("name", "arguments", "words"),
    [
        ("small_step", {"search_id": "nope", "node_id": "1"}, "no search with id 'nope'"),
        ("small_step", {"search_id": "{sid}", "node_id": "0"}, "use the large_step prompt"),
        ("small_step", {"search_id": "{sid}", "node_id": "7"}, "numbered 0 (the root) to 2"),
        ("small_step", {"search_id": "{sid}", "node_id": "one"}, "node_id must be a node's"),
        ("large_step", {"search_id": "{sid}", "answer_with": "json"}, "'tool' or 'text'"),
        ("small_step", {"search_id": "{sid}"}, "needs the arguments node_id"),
    ],
)
async def test_prompt_errors(
    client: Client, search: str, name: str, arguments: dict[str, str], words: str
) -> None:
    filled = {key: value.format(sid=search) for key, value in arguments.items()}
    with pytest.raises(MCPError) as caught:
        await client.get_prompt(name, filled)
    assert words in caught.value.message
