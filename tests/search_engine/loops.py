"""Search loops for other processes (importable, so ``spawn`` can start them), and the check
that a tree in the store is consistent."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path
from typing import Any

from adaexplore_mcp.search_engine import Action, BudgetExhausted, Edit, SearchEngine
from adaexplore_mcp.store import Store
from tests.search_engine.fakes import FakeJudge, kernel

_MARKER = re.compile(r"^# (speed|fails): .*$", re.MULTILINE)


def search_loop(
    db_path: str, search_id: str, worker: int, delay_s: float = 0.0, start: Any = None
) -> list[int]:
    """Select and expand until the step budget is spent; the ids of the nodes this worker made.
    ``start``: a barrier every worker passes first, so that none is still starting while the
    others spend the whole budget."""
    engine = SearchEngine(Store(Path(db_path)), FakeJudge(delay_s=delay_s))
    if start is not None:
        start.wait(120)
    return asyncio.run(_loop(engine, search_id, worker))


async def _loop(engine: SearchEngine, search_id: str, worker: int) -> list[int]:
    created: list[int] = []
    while True:
        try:
            selection = engine.select_node(search_id, author=f"worker-{worker}")
        except BudgetExhausted as spent:
            if spent.in_flight:  # others still hold budget; one of them may give some back
                await asyncio.sleep(0.01)
                continue
            return created
        n = len(created)
        speed = 1 + (worker * 7 + n * 3) % 5
        # exactly one marker line per kernel, so a small step can always replace it
        marker = "# fails: runtime" if (worker + n) % 6 == 0 else f"# speed: {speed}"
        node = selection.node
        try:
            if selection.action is Action.LARGE:
                body = f"{marker}\nclass ModelNew:\n    worker = {worker}\n    n = {n}"
                step = engine.regenerate(search_id, kernel(body), node.id, author=f"w{worker}")
            else:
                old = _MARKER.search(node.code or "").group(0)
                edit = Edit(old_str=old, new_str=f"{marker}\n# patched by {worker}.{n}")
                step = engine.apply_patch(search_id, node.id, [edit], author=f"w{worker}")
            created.append((await step).node.id)
        except BaseException:
            # give the selection back so the other workers are not left waiting for it
            engine.release(search_id, node.id)
            raise


def select_once(db_path: str, search_id: str, results) -> None:
    engine = SearchEngine(Store(Path(db_path)))
    results.put(engine.select_node(search_id).node.id)


def check_consistent(db_path: str | Path, search_id: str) -> int:
    """Every node but the root carries a verdict; a tree loaded from the store gives every node
    the visits and value of its subtree. Returns the number of nodes."""
    engine = SearchEngine(Store(Path(db_path)))
    tree = engine.get_tree(search_id)
    conn = sqlite3.connect(db_path)
    rows = conn.execute(
        "SELECT id, parent_id, status, result FROM search_nodes WHERE search_id = ? ORDER BY id",
        (search_id,),
    ).fetchall()
    conn.close()
    assert [row[0] for row in rows] == list(range(len(rows))), "node ids have gaps"
    visits = [0] * len(rows)
    values = [0.0] * len(rows)
    parents = {row[0]: row[1] for row in rows}
    for node_id, _, status, result in rows[1:]:
        assert status is not None and result is not None, f"node {node_id} is half-written"
        reward = tree.nodes[node_id].reward
        assert reward is not None, f"node {node_id} has no reward"
        current = node_id
        while current is not None:
            visits[current] += 1
            values[current] += reward
            current = parents[current]
    for node in tree.nodes:
        assert node.visits == visits[node.id], f"node {node.id}: visits"
        assert abs(node.value * node.visits - values[node.id]) < 1e-9, f"node {node.id}: value"
    return len(rows)
