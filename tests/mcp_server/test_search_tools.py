"""The search tools through an in-memory client on the CPU judge: a whole small search and
every error an agent can cause (test_outliving.py: cancelled and repeated steps, leases)."""

from __future__ import annotations

import pytest
from mcp import Client

from adaexplore_mcp.mcp_server import Workbench
from tests.mcp_server.conftest import GELU, GELU_COMPILE_ERROR, text

pytestmark = pytest.mark.anyio


async def call(client: Client, tool: str, **arguments: object) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    return result.structured_content


async def test_a_search_from_start_to_best_kernel(client: Client, bench: Workbench) -> None:
    search = await call(client, "start_search", task="gelu", max_steps=10, label="flow")
    sid = search["id"]
    assert search["node_count"] == 1 and search["budget"]["max_steps"] == 10

    first = await call(client, "select_node", search_id=sid, author="tester")
    assert first["action"] == "large" and first["node"]["id"] == 0
    assert first["next_call"]["tool"] == "regenerate"
    assert first["next_call"]["arguments"] == {"search_id": sid, "node_id": 0}
    assert first["rules"] and all(rule["text"].startswith("You cannot") for rule in first["rules"])

    step = await call(client, "regenerate", search_id=sid, code=GELU, node_id=0, note="first")
    node = step["node"]
    assert (
        node["id"] == 1 and node["status"] == "correct" and step["verdict"]["status"] == "correct"
    )
    assert node["code_chars"] == len(GELU) and node["kernel_uri"] == f"kernel://{sid}/1"
    assert step["improved"] and step["best_node_id"] == 1 and step["memory"] is None
    assert step["next_call"] == {
        "tool": "select_node",
        "arguments": {"search_id": sid},
        "why": step["next_call"]["why"],
    }

    second = await call(client, "select_node", search_id=sid)
    assert second["action"] == "small" and second["node"]["id"] == 1
    assert [entry["node_id"] for entry in second["working_memory"]] == [1]
    assert second["next_call"]["tool"] == "apply_patch" and second["node"]["code"] == GELU
    expected = bench.memory.get_rules(query=GELU, task="gelu")  # ranked for this kernel
    top = expected.rules[0].score
    relevant = [h.id for h in expected.rules if h.score >= bench.settings.mcp.rule_relevance * top]
    assert [r["id"] for r in second["rules"]] == relevant[: bench.settings.mcp.max_rules]
    assert second["context"]["used_tokens"] <= second["context"]["budget_tokens"]

    broken = await call(
        client,
        "apply_patch",
        search_id=sid,
        node_id=1,
        patches=[{"old_str": "tl.arange(0, BLOCK_SIZE)", "new_str": "tl.arange(0, 1000)"}],
        tokens=123,
    )
    assert broken["node"]["status"] == "compile_error" and broken["node"]["parent_id"] == 1
    assert "edits" not in broken["node"] and "code" not in broken["node"]
    assert broken["memory"]["rule"] is not None and broken["usage"]["tokens"] == 123

    tree = await call(client, "get_tree", search_id=sid)
    assert [n["id"] for n in tree["nodes"]] == [0, 1, 2]
    assert [n["parent_id"] for n in tree["nodes"]] == [None, 0, 1]
    assert tree["next_cursor"] is None
    page = await call(client, "get_tree", search_id=sid, limit=2)
    assert [n["id"] for n in page["nodes"]] == [0, 1] and page["next_cursor"]
    assert page["node_count"] == 3
    last = await call(client, "get_tree", search_id=sid, limit=5, cursor=page["next_cursor"])
    assert [n["id"] for n in last["nodes"]] == [2] and last["next_cursor"] is None
    assert [n["status"] for n in tree["nodes"]] == [None, "correct", "compile_error"]
    assert tree["best_node_id"] == 1 and tree["steps"] == 2
    assert "code" not in tree["nodes"][1]
    node2 = await call(client, "get_node", search_id=sid, node_id=2)
    assert node2["code"] == GELU_COMPILE_ERROR and node2["result"]["status"] == "compile_error"

    best = await call(client, "best_kernel", search_id=sid)
    assert best["node"]["id"] == 1 and best["decided_by"] == "reward"
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    remeasured = await client.call_tool(
        "best_kernel", {"search_id": sid, "remeasure": True}, progress_callback=progress
    )
    candidate = remeasured.structured_content["candidates"][0]
    assert candidate["node_id"] == 1 and candidate["disqualified"] is None
    # one correct kernel, re-measured remeasure_count (3) times: 3 evaluations of 5 steps
    values = [value for value, _, _ in seen]
    assert values == sorted(set(values)) and {total for _, total, _ in seen} == {15}
    assert seen[0][2].startswith(("evaluation 1/3: queued", "starting"))
    assert seen[-1][2].startswith("evaluation 3/3: ")

    listed = await call(client, "list_searches", task="gelu")
    assert sid in [s["id"] for s in listed["searches"]]

    held = await call(client, "select_node", search_id=sid)
    released = await call(client, "release", search_id=sid, node_id=held["node"]["id"])
    assert released["released"] is True
    again = await call(client, "release", search_id=sid, node_id=held["node"]["id"])
    assert again["released"] is False

    forked = await call(client, "fork", search_id=sid, node_id=1, max_steps=5, label="more")
    assert forked["forked_from"]["search_id"] == sid and forked["budget"]["max_steps"] == 5
    assert forked["node_count"] == 3


async def test_unknown_ids_name_what_exists(client: Client) -> None:
    sid = (await call(client, "start_search", task="gelu"))["id"]
    unknown = await client.call_tool("select_node", {"search_id": "nope"})
    assert unknown.is_error and "no search with id 'nope'" in text(unknown)
    assert sid in text(unknown)
    no_node = await client.call_tool("get_node", {"search_id": sid, "node_id": 42})
    assert no_node.is_error and "numbered 0 (the root) to 0" in text(no_node)
    negative = await client.call_tool("get_node", {"search_id": sid, "node_id": -1})
    assert negative.is_error and "greater than or equal to 0" in text(negative)
    tree = await client.call_tool("get_tree", {"search_id": "x" * 65})
    assert tree.is_error and "at most 64" in text(tree)


async def test_patches_that_do_not_apply_create_nothing(client: Client) -> None:
    sid = (await call(client, "start_search", task="gelu"))["id"]
    root = await client.call_tool(
        "apply_patch",
        {"search_id": sid, "node_id": 0, "patches": [{"old_str": "a", "new_str": "b"}]},
    )
    assert root.is_error and "write a whole kernel with regenerate" in text(root)
    await call(client, "regenerate", search_id=sid, code=GELU)

    missing = await client.call_tool(
        "apply_patch",
        {
            "search_id": sid,
            "node_id": 1,
            "patches": [{"old_str": "offsets = pid * BLOCK", "new_str": "x"}],
        },
    )
    assert missing.is_error
    assert "edit 0: old_str not found; the closest lines are:" in text(missing)
    assert "offsets = pid.to(tl.int64) * BLOCK_SIZE" in text(missing)

    twice = await client.call_tool(
        "apply_patch",
        {"search_id": sid, "node_id": 1, "patches": [{"old_str": "mask=mask", "new_str": "m"}]},
    )
    assert twice.is_error and "old_str found 2 times" in text(twice)

    none = await client.call_tool("apply_patch", {"search_id": sid, "node_id": 1, "patches": []})
    assert none.is_error and "patches" in text(none)

    empty = await client.call_tool("regenerate", {"search_id": sid, "code": "  \n"})
    assert empty.is_error and "kernel is empty" in text(empty)

    tree = await call(client, "get_tree", search_id=sid)
    assert len(tree["nodes"]) == 2  # the root and the one regenerated kernel


async def test_a_spent_budget_says_what_to_do(client: Client) -> None:
    sid = (await call(client, "start_search", task="gelu", max_steps=1))["id"]
    await call(client, "regenerate", search_id=sid, code=GELU)
    spent = await client.call_tool("select_node", {"search_id": sid})
    assert spent.is_error and "budget is spent" in text(spent) and "best_kernel" in text(spent)


async def test_a_search_keeps_its_precision_policy(client: Client) -> None:
    info = await call(client, "start_search", task="gelu", precision="tf32")
    assert info["settings"]["precision"] == "tf32"
    step = await call(client, "regenerate", search_id=info["id"], code=GELU)
    assert step["verdict"]["precision"] == "tf32"
    default = await call(client, "start_search", task="gelu")
    assert default["settings"]["precision"] == "strict"


async def test_a_search_keeps_its_operator_policy(client: Client, tmp_path) -> None:
    from tests.judge.mixed import LIBRARY_GEMM_TRITON_EPILOGUE, LINEAR_RELU_TASK

    task = tmp_path / "linear_relu.py"
    task.write_text(LINEAR_RELU_TASK)
    info = await call(client, "start_search", task=str(task), ops="mixed")
    assert info["settings"]["ops"] == "mixed"
    step = await call(client, "regenerate", search_id=info["id"], code=LIBRARY_GEMM_TRITON_EPILOGUE)
    verdict = step["verdict"]
    assert verdict["status"] == "correct" and verdict["ops"] == "mixed", verdict["message"]
    assert verdict["work_split"]["library_ops"] == {"mm": 1}
    default = await call(client, "start_search", task=str(task))
    assert default["settings"]["ops"] == "triton"
    step = await call(
        client, "regenerate", search_id=default["id"], code=LIBRARY_GEMM_TRITON_EPILOGUE
    )
    assert step["verdict"]["status"] == "rejected" and step["verdict"]["work_split"] is None


async def test_the_driver_reads_every_page_of_the_tree(client: Client) -> None:
    from adaexplore_mcp.driver.tools import Tools

    sid = (await call(client, "start_search", task="gelu"))["id"]
    for i in range(3):
        await call(client, "regenerate", search_id=sid, code=f"# version {i}\n{GELU}")
    listing = await Tools(client).get_tree(sid, page=2)
    assert [n.id for n in listing.nodes] == [0, 1, 2, 3] and listing.next_cursor is None
