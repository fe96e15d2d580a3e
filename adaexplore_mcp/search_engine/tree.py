"""One search's tree in memory: UCT selection with an expansion option and virtual loss.

The store is the truth; this is a cache kept in step by appending the rows committed since the
last look. That is enough because nodes are only ever appended (ids rise by one per search, under
the store's write lock), and a node's visits and value follow from the rewards below it: a new
node adds one visit and its reward to itself and every ancestor, here exactly as in the store.
"""

from __future__ import annotations

import bisect
import math
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from adaexplore_mcp.config import SearchSettings
from adaexplore_mcp.judge.result import Status
from adaexplore_mcp.search_engine.models import Action, NodeSummary
from adaexplore_mcp.search_engine.similarity import diverse_pick, jaccard, shingles


@dataclass(slots=True)
class TreeNode:
    id: int
    parent: int | None
    action: Action
    depth: int
    status: Status | None
    reward: float | None
    speedup: float | None
    runtime_ms: float | None
    visits: int
    value_sum: float
    author: str | None
    created_at: float
    children: list[int] = field(default_factory=list)
    small_children: int = 0

    @property
    def value(self) -> float:
        return self.value_sum / self.visits if self.visits else 0.0

    def summary(self) -> NodeSummary:
        return NodeSummary(
            id=self.id,
            parent_id=self.parent,
            action=self.action,
            depth=self.depth,
            status=self.status,
            speedup=self.speedup,
            runtime_ms=self.runtime_ms,
            reward=self.reward,
            visits=self.visits,
            value=self.value,
            children=list(self.children),
            author=self.author,
            created_at=self.created_at,
        )


class Tree:
    def __init__(self) -> None:
        self.nodes: list[TreeNode] = []
        self.best_id: int | None = None
        # correct nodes ranked best first, as (-reward, id): the pool's candidates
        self._ranked: list[tuple[float, int]] = []
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

    # -- keeping in step with the store ------------------------------------------------------

    def append_rows(self, rows: Iterable[sqlite3.Row]) -> None:
        """Add rows newer than ``last_id``, in id order. On the first load the stored visits and
        values are taken as they are; later, each new node is backed up here as in the store."""
        first_load = not self.nodes
        for row in rows:
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
                reward=row["reward"],
                speedup=row["speedup"],
                runtime_ms=row["runtime_ms"],
                visits=row["visits"] if first_load else 0,
                value_sum=row["value_sum"] if first_load else 0.0,
                author=row["author"],
                created_at=row["created_at"],
            )
            self.nodes.append(node)
            if node.parent is not None:
                parent = self.nodes[node.parent]
                parent.children.append(node.id)
                if node.action is Action.SMALL:
                    parent.small_children += 1
            if node.reward is None:
                continue
            if not first_load:
                self._backup(node.id, node.reward)
            if self.best_id is None or node.reward > self.nodes[self.best_id].reward:  # type: ignore[operator]
                self.best_id = node.id
            if node.status is Status.CORRECT:
                bisect.insort(self._ranked, (-node.reward, node.id))
                self._correct_version += 1

    def _backup(self, node_id: int, reward: float) -> None:
        current: int | None = node_id
        while current is not None:
            node = self.nodes[current]
            node.visits += 1
            node.value_sum += reward
            current = node.parent

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

    def select(self, leased: Iterable[int], settings: SearchSettings, start: int = 0) -> int:
        """UCT from ``start`` (the root, or the node a fork continues from: the path above it is
        context, not ground to expand). At every inner node the expansion option (a new child of
        this node) competes with its children; a leaf is always expanded. Each outstanding lease
        adds ``virtual_loss`` visits of reward 0 to its node and the node's ancestors, and counts
        as a pending child of its node, so concurrent workers spread out."""
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
                score = child.value_sum / n + c * math.sqrt(log_n / n) if n > 0 else math.inf
                if score > best_score:
                    best_child, best_score = child_id, score
            widen = len(node.children) + pending[node.id] + 1
            mean = node.value_sum / n_parent if n_parent > 0 else 0.0
            expand = mean + c * settings.expansion_weight * math.sqrt(log_n / widen)
            if expand > best_score:
                return node.id
            node = self.nodes[best_child]
        return node.id

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
        return [node_id for _, node_id in self._ranked[:k]]

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
