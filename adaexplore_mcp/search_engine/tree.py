"""One search's tree in memory: rewards, UCT selection with an expansion option and virtual loss.

The store is the truth and holds only what was measured: each node's verdict and runtime, and
the re-measurements ``best_kernel`` took. Rewards are relative to the search's fastest kernel, so
they move whenever the best does; they, and every node's visits, value and best reward below it,
are derived here from the measurements whenever new rows arrive, never stored where they could
go stale. New rows are appended: nodes and measurements are only ever appended, with ids that
rise under the store's write lock.
"""

from __future__ import annotations

import math
import sqlite3
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from adaexplore_mcp.judge.result import Status
from adaexplore_mcp.search_engine.models import Action, NodeSummary
from adaexplore_mcp.search_engine.reward import correct_reward, failure_reward
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.search_engine.similarity import diverse_pick, jaccard, shingles


@dataclass(slots=True)
class TreeNode:
    id: int
    parent: int | None
    action: Action
    depth: int
    status: Status | None
    speedup: float | None
    runtime_ms: float | None
    author: str | None
    created_at: float
    samples_ms: list[float] = field(default_factory=list)
    remeasure_failures: int = 0
    reward: float | None = None
    visits: int = 0
    value_sum: float = 0.0
    best_below: float = 0.0
    children: list[int] = field(default_factory=list)
    small_children: int = 0

    @property
    def value(self) -> float:
        return self.value_sum / self.visits if self.visits else 0.0

    @property
    def correct(self) -> bool:
        """Correct at its evaluation and at every re-measurement."""
        return self.status is Status.CORRECT and not self.remeasure_failures

    @property
    def median_ms(self) -> float | None:
        """The median over the first evaluation and every correct re-measurement."""
        return statistics.median(self.samples_ms) if self.samples_ms else None

    def summary(self) -> NodeSummary:
        return NodeSummary(
            id=self.id,
            parent_id=self.parent,
            action=self.action,
            depth=self.depth,
            status=self.status,
            speedup=self.speedup,
            runtime_ms=self.runtime_ms,
            median_ms=self.median_ms,
            reward=self.reward,
            visits=self.visits,
            value=self.value,
            children=list(self.children),
            author=self.author,
            created_at=self.created_at,
        )


class Tree:
    def __init__(self, settings: SearchSettings) -> None:
        self.settings = settings
        self.nodes: list[TreeNode] = []
        self.best_id: int | None = None
        self.last_measurement_id = 0
        # correct kernels best first, as (0 if timed else 1, median ms, id): the order of their
        # rewards, ties broken by age; the pool's and best_kernel's candidates
        self._ranked: list[tuple[int, float, int]] = []
        self._shingles: dict[int, frozenset] = {}
        self._similarity: dict[tuple[int, int], float] = {}
        self._pool: tuple[int, list[tuple[int, float]]] | None = None
        self._correct_version = 0

    @property
    def last_id(self) -> int:
        return len(self.nodes) - 1

    def __contains__(self, node_id: int) -> bool:
        return 0 <= node_id < len(self.nodes)

    def __getitem__(self, node_id: int) -> TreeNode:
        return self.nodes[node_id]

    @property
    def correct_count(self) -> int:
        return len(self._ranked)

    @property
    def best_ms(self) -> float | None:
        """The lowest median runtime of a correct kernel; None while none is timed."""
        first = self._ranked[0] if self._ranked else None
        return first[1] if first is not None and first[0] == 0 else None

    # -- keeping in step with the store ------------------------------------------------------

    def refresh(self, rows: Iterable[sqlite3.Row], measurements: Iterable[sqlite3.Row]) -> None:
        """Add node rows newer than ``last_id`` (in id order) and measurement rows newer than
        ``last_measurement_id``, then derive every reward and statistic again if any came."""
        changed = False
        for row in rows:
            self._append(row)
            changed = True
        for row in measurements:
            node = self.nodes[row["node_id"]]
            if row["status"] != Status.CORRECT.value:
                node.remeasure_failures += 1
            elif row["runtime_ms"] is not None:
                node.samples_ms.append(row["runtime_ms"])
            self.last_measurement_id = row["id"]
            changed = True
        if changed:
            self._derive()

    def _append(self, row: sqlite3.Row) -> None:
        if row["id"] != len(self.nodes):
            raise RuntimeError(
                f"node {row['id']} arrived after {self.last_id}: the tree cache is out of "
                "step with the store; reopen the search"
            )
        node = TreeNode(
            id=row["id"],
            parent=row["parent_id"],
            action=Action(row["action"]),
            depth=row["depth"],
            status=Status(row["status"]) if row["status"] else None,
            speedup=row["speedup"],
            runtime_ms=row["runtime_ms"],
            author=row["author"],
            created_at=row["created_at"],
            samples_ms=[row["runtime_ms"]] if row["runtime_ms"] is not None else [],
        )
        self.nodes.append(node)
        if node.parent is not None:
            parent = self.nodes[node.parent]
            parent.children.append(node.id)
            if node.action is Action.SMALL:
                parent.small_children += 1

    def _derive(self) -> None:
        """Rank the correct kernels, score every node against the fastest, and sum each
        subtree: a scored node adds one visit and its reward to itself and every ancestor.
        Children have higher ids than their parents, so one pass from the last id up does it."""
        self._ranked = sorted(
            (0 if node.median_ms is not None else 1, node.median_ms or 0.0, node.id)
            for node in self.nodes
            if node.correct
        )
        best_ms = self.best_ms
        for node in self.nodes:
            node.reward = self._reward(node, best_ms)
            scored = node.reward is not None
            node.visits = 1 if scored else 0
            node.value_sum = node.reward if node.reward is not None else 0.0
            node.best_below = node.reward if node.reward is not None else 0.0
        for node in reversed(self.nodes):
            if node.parent is not None:
                parent = self.nodes[node.parent]
                parent.visits += node.visits
                parent.value_sum += node.value_sum
                parent.best_below = max(parent.best_below, node.best_below)
        self.best_id = self._best()
        self._correct_version += 1

    def _reward(self, node: TreeNode, best_ms: float | None) -> float | None:
        if node.status is None:
            return None
        if node.status is Status.CORRECT and node.remeasure_failures:
            return failure_reward(Status.INCORRECT, self.settings)  # flaky: wrong at times
        if node.status is Status.CORRECT:
            return correct_reward(node.median_ms, best_ms, self.settings)
        return failure_reward(node.status, self.settings)

    def _best(self) -> int | None:
        """The first of the ranked correct kernels; while none is correct, the failure that got
        furthest (the oldest on a tie)."""
        if self._ranked:
            return self._ranked[0][2]
        scored = [node for node in self.nodes if node.reward is not None]
        return max(scored, key=lambda n: (n.reward, -n.id)).id if scored else None

    def ancestors(self, node_id: int) -> list[int]:
        """The node's ancestors, parent first, root last."""
        out = []
        current = self.nodes[node_id].parent
        while current is not None:
            out.append(current)
            current = self.nodes[current].parent
        return out

    def subtree(self, node_id: int) -> list[int]:
        out, stack = [], [node_id]
        while stack:
            current = stack.pop()
            out.append(current)
            stack.extend(self.nodes[current].children)
        return sorted(out)

    # -- selection ---------------------------------------------------------------------------

    def select(self, leased: Iterable[int], start: int = 0) -> int:
        """UCT from ``start`` (the root, or the node a fork continues from: the path above it is
        context, not ground to expand). A subtree's worth is its mean reward blended with the
        best reward in it (``leader_weight``). At every inner node the expansion option (a new
        child of this node) competes with its children; a leaf is always expanded. Each
        outstanding lease adds ``virtual_loss`` visits of reward 0 to its node and the node's
        ancestors, and counts as a pending child of its node, so concurrent workers spread
        out."""
        settings = self.settings
        pending = Counter(leased)
        loss: Counter[int] = Counter()
        for node_id, count in pending.items():
            loss[node_id] += count
            for ancestor in self.ancestors(node_id):
                loss[ancestor] += count
        c = settings.exploration_weight
        node = self.nodes[start]
        while node.children:
            n_parent = node.visits + settings.virtual_loss * loss[node.id]
            log_n = math.log(n_parent + 1)
            best_child, best_score = -1, -math.inf
            for child_id in node.children:
                child = self.nodes[child_id]
                n = child.visits + settings.virtual_loss * loss[child_id]
                score = self._worth(child, n) + c * math.sqrt(log_n / n) if n > 0 else math.inf
                if score > best_score:
                    best_child, best_score = child_id, score
            widen = len(node.children) + pending[node.id] + 1
            worth = self._worth(node, n_parent) if n_parent > 0 else 0.0
            expand = worth + c * settings.expansion_weight * math.sqrt(log_n / widen)
            if expand > best_score:
                return node.id
            node = self.nodes[best_child]
        return node.id

    def _worth(self, node: TreeNode, n: float) -> float:
        """The exploitation term: the mean reward over ``n`` visits (virtual loss counting as
        visits of reward 0) blended with the best reward in the subtree."""
        lead = self.settings.leader_weight
        return (1 - lead) * node.value_sum / n + lead * node.best_below

    # -- context -----------------------------------------------------------------------------

    def working_chain(self, node_id: int, k: int) -> list[int]:
        """The chain from the nearest large-step ancestor (inclusive) down to the node, at most
        its last ``k`` nodes, oldest first. Empty for the root."""
        chain: list[int] = []
        current: int | None = node_id
        while current is not None and len(chain) < k:
            node = self.nodes[current]
            if node.action is Action.ROOT:
                break
            chain.append(current)
            if node.action is Action.LARGE:
                break
            current = node.parent
        return chain[::-1]

    def top_correct(self, k: int) -> list[int]:
        """The ``k`` best correct kernels, best (the fastest) first."""
        return [node_id for _, _, node_id in self._ranked[:k]]

    def pool(
        self,
        settings: SearchSettings,
        load_codes: Callable[[list[int]], dict[int, str]],
    ) -> list[tuple[int, float]]:
        """The best correct kernels, skipping any too similar to a better one already taken:
        (node id, its highest similarity to a better member). Cached until a correct node
        arrives; shingles and pairwise similarities are computed once, so a new correct node
        costs only its own comparisons."""
        if self._pool is not None and self._pool[0] == self._correct_version:
            return self._pool[1]
        scan = self.top_correct(settings.pool_scan)
        missing = [node_id for node_id in scan if node_id not in self._shingles]
        if missing:
            for node_id, code in load_codes(missing).items():
                self._shingles[node_id] = shingles(code)
        picked = diverse_pick(
            scan, self._similar, size=settings.pool_size, threshold=settings.similarity_threshold
        )
        self._pool = (self._correct_version, picked)
        return picked

    def _similar(self, a: int, b: int) -> float:
        key = (a, b) if a < b else (b, a)
        value = self._similarity.get(key)
        if value is None:
            value = self._similarity[key] = jaccard(self._shingles[a], self._shingles[b])
        return value
