"""Which step to take at a selected node: small (patch it) or large (a whole new kernel)."""

from __future__ import annotations

import random

from adaexplore_mcp.search_engine.models import Action
from adaexplore_mcp.search_engine.repository import SearchRecord
from adaexplore_mcp.search_engine.tree import Tree


def choose_action(
    record: SearchRecord, tree: Tree, node_id: int, pending_small: int
) -> tuple[Action, str]:
    """Large at the root (it holds no kernel), at a node whose small-step children (recorded or
    selected) fill its quota, and otherwise with probability ``p_large``. The reason tells the
    agent which tool to call."""
    settings = record.settings
    node = tree[node_id]
    large = f"write a whole new kernel and call regenerate(search_id, code, node_id={node_id})"
    if node.action is Action.ROOT:
        return Action.LARGE, f"the root holds the task's reference, not a kernel: {large}"
    small_children = node.small_children + pending_small
    if small_children >= settings.small_quota:
        return Action.LARGE, (
            f"node {node_id} already has {small_children} small-step children (quota "
            f"{settings.small_quota}): {large}"
        )
    # one coin per selection, derived from the search's seed and its selection count: a search
    # replays the same choices, and every process draws the same coin for the same selection
    coin = random.Random(f"{record.seed}:{record.selections}").random()
    if coin < settings.p_large:
        return Action.LARGE, f"exploration (p_large={settings.p_large}): {large}"
    return Action.SMALL, (
        f"refine node {node_id}'s kernel: call apply_patch(search_id, {node_id}, edits) with "
        "exact old_str/new_str edits"
    )
