"""The MCTS backup (visits, value and best reward summed up a node's ancestors) is written once,
in the tree (``Tree._derive``): the store keeps only measurements, and a fork copies nodes and
lets the new search's tree derive the rest. A second copy of the rule (a recursive SQL update,
a fork that carries statistics over) would drift from the first."""

from __future__ import annotations

import ast
from pathlib import Path

import adaexplore_mcp

PACKAGE = Path(adaexplore_mcp.__file__).parent
STATISTICS = {"visits", "value_sum", "best_below"}


def _writes_of_statistics(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr in STATISTICS:
                lines.append(node.lineno)
    return lines


def test_only_the_tree_updates_a_node_s_statistics() -> None:
    writers = {}
    for path in PACKAGE.rglob("*.py"):
        lines = _writes_of_statistics(ast.parse(path.read_text()))
        if lines:
            writers[str(path.relative_to(PACKAGE))] = lines
    assert set(writers) == {"search_engine/tree.py"}, writers


def test_no_sql_sums_statistics_up_the_tree() -> None:
    for path in PACKAGE.rglob("*.py"):
        assert "WITH RECURSIVE" not in path.read_text().upper(), path


def test_the_check_sees_a_second_backup() -> None:
    second = ast.parse("def backup(node, parent):\n    parent.visits += node.visits\n")
    assert _writes_of_statistics(second) == [2]
