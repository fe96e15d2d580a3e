"""The context a selected step needs: working memory for a small step, the pool for a large one."""

from __future__ import annotations

import sqlite3

from adaexplore_mcp.search_engine import repository as repo
from adaexplore_mcp.search_engine.models import Action, MemoryEntry, PoolEntry
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.search_engine.tree import Tree
from adaexplore_mcp.search_engine.views import memory_entry, pool_entry


def step_context(
    conn: sqlite3.Connection,
    search_id: str,
    tree: Tree,
    node_id: int,
    action: Action,
    settings: SearchSettings,
) -> tuple[list[MemoryEntry], list[PoolEntry]]:
    """A small step sees the chain it continues (from the nearest large-step ancestor, the last
    ``working_memory_k`` kernels with the judge's feedback); a large step sees the best correct
    kernels that differ in structure, to build on without copying one of them."""
    if action is Action.SMALL:
        chain = tree.working_chain(node_id, settings.working_memory_k)
        rows = repo.full_nodes(conn, search_id, chain)
        return [memory_entry(rows[i], tree[i]) for i in chain], []
    picked = tree.pool(settings, lambda ids: repo.codes(conn, search_id, ids))
    rows = repo.full_nodes(conn, search_id, [i for i, _ in picked])
    return [], [pool_entry(rows[i], tree[i], similar) for i, similar in picked]
