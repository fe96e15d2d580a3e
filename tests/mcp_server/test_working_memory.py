"""What the agent learned at a step reaches the next one: the note a step was sent with and the
end of what its kernel printed, in select_node's working memory and the small_step prompt, and
within select_node's budget however long they are."""

from __future__ import annotations

import pytest
from mcp import Client

from adaexplore_mcp.judge import Status
from adaexplore_mcp.mcp_server import Workbench
from adaexplore_mcp.mcp_server.answers import tokens_of
from adaexplore_mcp.mcp_server.selection import build_selection
from adaexplore_mcp.search_engine import (
    Action,
    Budget,
    Edit,
    MemoryEntry,
    NodeView,
    Selection,
    Usage,
)
from tests.mcp_server.conftest import GELU, text

# The kernel reports its own launch time from forward, as an agent's kernel may.
TIMED = GELU.replace(
    "        return y\n",
    '        print("gelu_tanh_kernel launch: 12.5 us (timed in forward)")\n        return y\n',
)
assert TIMED != GELU


async def call(client: Client, tool: str, **arguments: object) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    return result.structured_content


@pytest.mark.anyio
async def test_an_ancestors_note_and_printed_line_reach_the_next_selection_and_prompt(
    client: Client, bench: Workbench
) -> None:
    sid = (await call(client, "start_search", task="gelu", max_steps=10))["id"]
    first = await call(
        client,
        "regenerate",
        search_id=sid,
        code=TIMED,
        note="one flat pass; the print times the launch",
    )
    assert first["verdict"]["status"] == "correct", first["verdict"]
    assert "12.5 us" in (first["verdict"]["output_tail"] or "")
    patch = {"old_str": "num_warps=8", "new_str": "num_warps=4"}
    second = await call(
        client,
        "apply_patch",
        search_id=sid,
        node_id=first["node"]["id"],
        patches=[patch],
        note="halve the warps: 4096 elements keep 4 warps busy",
    )
    child = second["node"]["id"]
    for _ in range(3):  # each selection holds its node, so the next one picks another
        selection = await call(client, "select_node", search_id=sid)
        if selection["node"]["id"] == child:
            break
    else:
        pytest.fail("select_node never picked the patched node")
    assert selection["action"] == "small"
    ancestor, this = selection["working_memory"]
    assert ancestor["node_id"] == first["node"]["id"] and this["node_id"] == child
    assert ancestor["note"] == "one flat pass; the print times the launch"
    assert "gelu_tanh_kernel launch: 12.5 us" in ancestor["output_tail"]
    assert this["note"].startswith("halve the warps")
    assert selection["context"]["used_tokens"] <= selection["context"]["budget_tokens"]

    prompt = bench.prompts.small_step(sid, child)
    assert "Note sent with the step: one flat pass; the print times the launch" in prompt
    assert "gelu_tanh_kernel launch: 12.5 us (timed in forward)" in prompt
    assert "Note sent with the step: halve the warps" in prompt


def selection_with(chain: list[MemoryEntry]) -> Selection:
    node = chain[-1]
    view = NodeView(
        id=node.node_id,
        parent_id=node.node_id - 1,
        action=Action.SMALL,
        depth=node.node_id,
        status=Status.CORRECT,
        speedup=1.0,
        runtime_ms=None,
        reward=0.5,
        visits=1,
        value=0.5,
        children=[],
        author=None,
        created_at=0.0,
        code="x = 1\n",
        edits=None,
        note=None,
        tokens=0,
        copied_from=None,
        result=None,
    )
    return Selection(
        search_id="s",
        node=view,
        action=Action.SMALL,
        reason="test",
        working_memory=chain,
        pool=[],
        lease_expires_at=0.0,
        usage=Usage(steps=len(chain), in_flight=1, evaluations=len(chain), wall_s=0.0, tokens=0),
        budget=Budget(max_steps=100),
    )


def chatty_chain(length: int) -> list[MemoryEntry]:
    """Entries at the sizes the engine trims to (600-character notes and outputs) with long
    edits, oldest first."""
    return [
        MemoryEntry(
            node_id=i,
            action=Action.LARGE if i == 1 else Action.SMALL,
            edits=None if i == 1 else [Edit(old_str="a" * 1000, new_str="b" * 1000)],
            status=Status.CORRECT,
            speedup=1.0 + i / 10,
            reward=0.5,
            feedback=f"correct, {1.0 + i / 10:.2f}x the baseline",
            note=f"note {i}: " + "why this step " * 42,
            output_tail=f"output {i}: " + "launch 3.1 us\n" * 42,
        )
        for i in range(1, length + 1)
    ]


# the node being patched (its entry alone: about 1,050 tokens) is sent whatever the budget
@pytest.mark.parametrize("budget", [1100, 1300, 1700, 2300, 3000, 4000])
def test_long_notes_and_outputs_stay_within_the_budget_and_the_oldest_lose_them_first(
    budget: int,
) -> None:
    chain = chatty_chain(6)
    answer = build_selection(selection_with(chain), [], [], budget)
    assert answer.context.used_tokens <= budget and tokens_of(answer) <= budget
    memory = {entry.node_id: entry for entry in answer.working_memory}
    assert memory[6] == chain[-1]  # the node being patched keeps everything
    ids = [entry.node_id for entry in answer.working_memory]
    assert ids == sorted(ids) and ids[-1] == 6  # oldest first, the node last
    older = [i for i in ids if i != 6]
    assert older == list(range(6 - len(older), 6))  # what is dropped is the oldest
    for part in ("note", "output_tail", "edits"):
        kept = [i for i in older if getattr(memory[i], part) is not None]
        assert kept == older[len(older) - len(kept) :], part  # the newest keep it
        lost = [i for i in older if getattr(memory[i], part) != getattr(chain[i - 1], part)]
        named = {"note": "notes", "output_tail": "printed output", "edits": "edits"}[part]
        said = [o for o in answer.context.omitted if o.startswith(f"the {named} of nodes ")]
        assert said == (
            [f"the {named} of nodes {', '.join(map(str, lost))} (get_node)"] if lost else []
        )
    # a note outlasts printed output, which outlasts edits
    with_note = {i for i in older if memory[i].note}
    with_output = {i for i in older if memory[i].output_tail}
    with_edits = {i for i in older if memory[i].edits}
    assert with_edits <= with_output <= with_note
    dropped = set(range(1, 6)) - set(older)
    if dropped:
        assert f"working-memory entries of nodes {', '.join(map(str, sorted(dropped)))}" in (
            " ".join(answer.context.omitted)
        )


def test_every_entry_keeps_its_verdict_before_any_keeps_its_note() -> None:
    chain = chatty_chain(6)
    bare = build_selection(selection_with(chain), [], [], 100_000)
    assert bare.working_memory == chain and bare.context.omitted == []
    # room for the five verdicts and a little more: all five stay, notes go to the newest
    tight = build_selection(selection_with(chain), [], [], 1500)
    ids = [entry.node_id for entry in tight.working_memory]
    assert ids == [1, 2, 3, 4, 5, 6], tight.context.omitted
    assert tight.working_memory[0].note is None and tight.working_memory[4].note is not None
