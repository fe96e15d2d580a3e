"""Evaluations that outlive their request, steps that are not evaluated twice, progress while a
long evaluation runs, and leases an agent can see and that a client gives back by leaving."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from adaexplore_mcp.app import open_app
from adaexplore_mcp.mcp_server import Workbench, build_server
from tests.mcp_server.conftest import GELU, GELU_SLOW_START, make_settings, text

pytestmark = pytest.mark.anyio


async def call(client: Client, tool: str, **arguments: object) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    return result.structured_content


class Counting:
    """Counts the judge's evaluations under a workbench."""

    def __init__(self, bench: Workbench) -> None:
        self.count = 0
        inner = bench.judge.evaluate

        async def evaluate(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
            self.count += 1
            return await inner(*args, **kwargs)

        bench.judge.evaluate = evaluate  # type: ignore[method-assign]


async def _cancel_once_compiling(client: Client, tool: str, arguments: dict) -> None:
    compiling = anyio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        if message and message.startswith("compiling"):
            compiling.set()

    async with anyio.create_task_group() as group:

        async def step() -> None:
            await client.call_tool(tool, arguments, progress_callback=progress)

        group.start_soon(step)
        with anyio.fail_after(60):
            await compiling.wait()
        group.cancel_scope.cancel()


async def test_a_cancelled_step_is_recorded_and_a_resent_one_joins_it(
    client: Client, bench: Workbench
) -> None:
    sid = (await call(client, "start_search", task="gelu"))["id"]
    counting = Counting(bench)
    arguments = {"search_id": sid, "code": GELU_SLOW_START}
    await _cancel_once_compiling(client, "regenerate", arguments)
    tree = await call(client, "get_tree", search_id=sid)
    assert len(tree["nodes"]) == 1 and tree["in_flight"] == 1  # still evaluating
    assert tree["leases"][0]["evaluating"] is True

    again = await call(client, "regenerate", **arguments)
    assert again["node"]["id"] == 1 and again["verdict"]["status"] == "correct"
    assert again["reused"] is False  # joined while it ran: the same answer
    assert counting.count == 1
    tree = await call(client, "get_tree", search_id=sid)
    assert len(tree["nodes"]) == 2 and tree["steps"] == 1 and tree["leases"] == []

    # once recorded, the same kernel under the same parent is that node: nothing is spent
    third = await call(client, "regenerate", **arguments)
    assert third["node"]["id"] == 1 and third["reused"] is True and counting.count == 1
    assert third["usage"]["steps"] == 1


async def test_a_step_nobody_waits_for_is_recorded(client: Client, bench: Workbench) -> None:
    sid = (await call(client, "start_search", task="gelu"))["id"]
    await _cancel_once_compiling(
        client, "regenerate", {"search_id": sid, "code": "# alone\n" + GELU_SLOW_START}
    )
    with anyio.fail_after(60):
        while (await call(client, "get_tree", search_id=sid))["node_count"] < 2:
            await anyio.sleep(0.2)
    node = await call(client, "get_node", search_id=sid, node_id=1)
    assert node["status"] == "correct" and node["code"].startswith("# alone\n")


async def test_a_cancelled_evaluation_is_joined_by_the_same_kernel(
    client: Client, bench: Workbench
) -> None:
    counting = Counting(bench)
    code = "# evaluate\n" + GELU_SLOW_START
    await _cancel_once_compiling(client, "evaluate_kernel", {"task": "gelu", "code": code})
    result = await call(client, "evaluate_kernel", task="gelu", code=code)
    assert result["status"] == "correct" and counting.count == 1


async def test_no_step_answer_carries_the_kernel_sent(client: Client) -> None:
    sid = (await call(client, "start_search", task="gelu"))["id"]
    marker = "# a line only this kernel has"
    large = await client.call_tool(
        "regenerate", {"search_id": sid, "code": f"{marker}\n{GELU}", "note": "n"}
    )
    small = await client.call_tool(
        "apply_patch",
        {
            "search_id": sid,
            "node_id": 1,
            "patches": [{"old_str": marker, "new_str": "# patched: a distinctive new line"}],
        },
    )
    for answer in (large, small):
        assert not answer.is_error, text(answer)
        assert "tl.program_id" not in text(answer) and "distinctive" not in text(answer)
        assert marker not in text(answer)
    assert small.structured_content["node"]["code_chars"] > 1000


async def test_a_long_evaluation_reports_progress_at_least_every_5_s(client: Client) -> None:
    code = "import time\n\ntime.sleep(30)\n" + GELU
    stamps: list[tuple[float, float]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        stamps.append((time.monotonic(), value))

    started = time.monotonic()
    result = await client.call_tool(
        "evaluate_kernel", {"task": "gelu", "code": code}, progress_callback=progress
    )
    ended = time.monotonic()
    assert not result.is_error and ended - started >= 30
    times = [started] + [t for t, _ in stamps] + [ended]
    assert max(b - a for a, b in itertools.pairwise(times)) <= 5.0
    values = [v for _, v in stamps]
    assert values == sorted(set(values))  # rising with every notification


async def test_leases_are_visible_and_a_leaving_client_gives_them_back(tmp_path: Path) -> None:
    bench = Workbench(open_app(make_settings(tmp_path)))
    server = build_server(bench, close_on_shutdown=False)
    try:
        async with Client(server, mode="legacy") as watcher:
            sid = (await call(watcher, "start_search", task="gelu"))["id"]
            await call(watcher, "regenerate", search_id=sid, code=GELU)
            async with Client(server, mode="legacy") as agent:
                first = await call(agent, "select_node", search_id=sid)
                again = await call(agent, "select_node", search_id=sid)  # replaces the first
                assert [lease["yours"] for lease in again["leases"]] == [True]
                assert first["lease_expires_at"] <= again["lease_expires_at"]
                seen = await call(watcher, "get_tree", search_id=sid)
                assert len(seen["leases"]) == 1 and seen["in_flight"] == 1
                assert seen["leases"][0]["yours"] is False
                assert seen["leases"][0]["node_id"] == again["node"]["id"]
            with anyio.fail_after(10):
                while (await call(watcher, "get_tree", search_id=sid))["leases"]:
                    await anyio.sleep(0.05)
            after = await call(watcher, "get_tree", search_id=sid)
            assert after["in_flight"] == 0
    finally:
        await bench.close()


async def test_a_kernel_the_search_holds_under_another_node_spends_no_step(
    client: Client, bench: Workbench
) -> None:
    sid = (await call(client, "start_search", task="gelu"))["id"]
    first = await call(client, "regenerate", search_id=sid, code=GELU)
    counting = Counting(bench)
    selected = await call(client, "select_node", search_id=sid)
    assert selected["node"]["id"] == first["node"]["id"] == 1
    # sent again as a child of node 1 (not of the root it was made under), padded with spaces
    padded = GELU.replace("\n", "   \n")
    again = await call(client, "regenerate", search_id=sid, code=padded, node_id=1)
    assert again["reused"] is True and again["node"]["id"] == 1 and counting.count == 0
    assert again["usage"]["steps"] == 1 and again["usage"]["in_flight"] == 0
    assert "already node 1" in again["next_call"]["why"] and again["improved"] is False
    tree = await call(client, "get_tree", search_id=sid)
    assert len(tree["nodes"]) == 2 and tree["leases"] == []
