"""Deciding the best kernel on every measurement of the top candidates, not one lucky sample."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from adaexplore_mcp.config import SearchSettings
from adaexplore_mcp.judge.result import EvalResult, Status
from adaexplore_mcp.search_engine.models import Candidate, Measurement
from adaexplore_mcp.search_engine.reward import runtime_of, speedup_of
from adaexplore_mcp.search_engine.tree import TreeNode


def decide(
    nodes: Sequence[TreeNode], measurements: Sequence[Measurement]
) -> tuple[int | None, str, list[Candidate]]:
    """(chosen node id, how it was decided, the candidates). ``nodes`` are the top candidates by
    reward, best first. A candidate is ruled out when any re-measurement was not correct (a
    flaky kernel). With timings, the lowest median runtime over the first evaluation and every
    re-measurement wins; without (the CPU interpreter), the highest reward does."""
    by_node: dict[int, list[Measurement]] = {node.id: [] for node in nodes}
    for measurement in measurements:
        if measurement.node_id in by_node:
            by_node[measurement.node_id].append(measurement)
    candidates = []
    for node in nodes:
        taken = by_node[node.id]
        failed = [m for m in taken if m.status is not Status.CORRECT]
        samples = [node.runtime_ms] if node.runtime_ms is not None else []
        samples += [m.runtime_ms for m in taken if m.runtime_ms is not None and not failed]
        speedups = [node.speedup] if node.speedup is not None else []
        speedups += [m.speedup for m in taken if m.speedup is not None]
        candidates.append(
            Candidate(
                node_id=node.id,
                samples_ms=samples,
                median_ms=statistics.median(samples) if samples else None,
                speedup=statistics.median(speedups) if speedups else None,
                disqualified=(
                    f"re-measurement {failed[0].status.value} ({len(failed)} of {len(taken)})"
                    if failed
                    else None
                ),
            )
        )
    eligible = [c for c in candidates if c.disqualified is None]
    timed = [c for c in eligible if c.median_ms is not None]
    if timed:
        return min(timed, key=lambda c: c.median_ms or 0.0).node_id, "median_runtime", candidates
    if eligible:
        return eligible[0].node_id, "reward", candidates
    return None, "none", candidates


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
