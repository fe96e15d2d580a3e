"""Deciding the best kernel on every measurement of the top candidates, not one lucky sample.

The tree ranks correct kernels by their median runtime over every measurement, and scores them
by the same number, so the best kernel is simply the tree's best: what ``best_kernel`` returns,
what every step answer names as the best node and what selection treats as the leader agree.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from adaexplore_mcp.judge.result import EvalResult, Status
from adaexplore_mcp.search_engine.models import Candidate, Measurement
from adaexplore_mcp.search_engine.reward import runtime_of, speedup_of
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.search_engine.tree import Tree


def decide(
    tree: Tree, considered: Sequence[int], measurements: Sequence[Measurement]
) -> tuple[int | None, str, list[Candidate]]:
    """(chosen node id, how it was decided, the candidates). ``considered`` are the nodes that
    were candidates (the top by reward before any re-measurement); the tree's best is added
    when a re-measurement moved another kernel ahead of them. A candidate is ruled out when any
    re-measurement was not correct (a flaky kernel)."""
    chosen = tree.best_id if tree.correct_count else None
    ids = list(dict.fromkeys([*considered, *([chosen] if chosen is not None else [])]))
    candidates = [_candidate(tree, node_id, measurements) for node_id in ids]
    if chosen is None:
        return None, "none", candidates
    decided_by = "median_runtime" if tree[chosen].median_ms is not None else "reward"
    return chosen, decided_by, candidates


def _candidate(tree: Tree, node_id: int, measurements: Sequence[Measurement]) -> Candidate:
    node = tree[node_id]
    taken = [m for m in measurements if m.node_id == node_id]
    failed = [m for m in taken if m.status is not Status.CORRECT]
    speedups = [node.speedup] if node.speedup is not None else []
    speedups += [m.speedup for m in taken if m.speedup is not None]
    return Candidate(
        node_id=node_id,
        samples_ms=list(node.samples_ms),
        median_ms=node.median_ms,
        speedup=statistics.median(speedups) if speedups else None,
        disqualified=(
            f"re-measurement {failed[0].status.value} ({len(failed)} of {len(taken)})"
            if failed
            else None
        ),
    )


def measurement(
    node_id: int, result: EvalResult, settings: SearchSettings, now: float
) -> Measurement:
    return Measurement(
        node_id=node_id,
        status=result.status,
        runtime_ms=runtime_of(result),
        speedup=speedup_of(result, settings),
        device=result.environment.device if result.environment else None,
        created_at=now,
    )
