"""The search engine: one method per MCP tool, every change committed to the store as it happens.
The step methods are in stepping.py, the store and caches they all use in core.py.

Each method is one or a few short transactions. Nothing is held between calls but caches that
the store can rebuild, so any number of engines in any number of processes can work on one search,
and a killed process loses at most the evaluations it was waiting for.
"""

from __future__ import annotations

from adaexplore_mcp.judge.result import ProgressCallback
from adaexplore_mcp.search_engine import budget as budgets
from adaexplore_mcp.search_engine import leases
from adaexplore_mcp.search_engine import repository as repo
from adaexplore_mcp.search_engine.actions import choose_action
from adaexplore_mcp.search_engine.best import decide, measurement
from adaexplore_mcp.search_engine.context import step_context
from adaexplore_mcp.search_engine.errors import InvalidStep
from adaexplore_mcp.search_engine.leases import LeaseView
from adaexplore_mcp.search_engine.lineage import fork_rows, forked_record, new_record
from adaexplore_mcp.search_engine.models import (
    Action,
    BestKernel,
    Budget,
    MemoryEntry,
    NodeView,
    PoolEntry,
    SearchExport,
    SearchInfo,
    Selection,
    TreeView,
    Usage,
)
from adaexplore_mcp.search_engine.repository import NewNode
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.search_engine.stepping import Stepping
from adaexplore_mcp.search_engine.views import node_view, search_info
from adaexplore_mcp.tasks import Task


class SearchEngine(Stepping):
    """MCTS over kernels in one store. ``settings`` are the defaults for new searches; a search
    keeps the settings it was started (or forked) with. Without a judge the engine can read and
    fork searches but not take steps."""

    # -- searches ----------------------------------------------------------------------------

    def start_search(
        self,
        task: Task,
        *,
        budget: Budget | None = None,
        settings: SearchSettings | None = None,
        label: str | None = None,
        author: str | None = None,
    ) -> SearchInfo:
        """A new tree whose root stands for the task's reference (it holds no kernel)."""
        settings = settings or self.settings
        record = new_record(
            task,
            settings=settings,
            budget=budget or budgets.default_budget(settings),
            label=label,
            now=self._clock(),
        )
        root = NewNode(parent_id=None, action=Action.ROOT, author=author)
        with self._lock, self.store.connect() as conn:
            repo.insert_search(conn, record)
            repo.insert_node(conn, record.id, root, record.created_at)
        return self.get_search(record.id)

    def get_search(self, search_id: str) -> SearchInfo:
        with self._open(search_id) as (conn, record, tree):
            return search_info(conn, record, tree, self._clock())

    def task(self, search_id: str) -> Task:
        """The task a search was started on, as stored with it (the file may have moved)."""
        with self._open(search_id) as (_, record, _):
            return self._task(record)

    def list_searches(
        self, *, task: str | None = None, limit: int | None = 50, offset: int = 0
    ) -> list[SearchInfo]:
        """Newest first, optionally only those of one task; ``offset`` skips the newest."""
        with self._lock, self.store.connect() as conn:
            ids = [record.id for record in repo.list_searches(conn, task, limit, offset)]
        return [self.get_search(search_id) for search_id in ids]

    def resume(self, search_id: str) -> SearchInfo:
        """Reopen a search after its process stopped or was killed: outstanding selections are
        dropped (nobody will act on them), the wall clock restarts from now, and the tree is
        reloaded from the store."""
        with self._lock, self.store.connect() as conn:
            self._record(conn, search_id)
            leases.clear(conn, search_id)
            repo.restart_clock(conn, search_id, self._clock())
            self._trees.pop(search_id, None)
        return self.get_search(search_id)

    def fork(
        self,
        search_id: str,
        node_id: int,
        *,
        budget: Budget | None = None,
        settings: SearchSettings | None = None,
        label: str | None = None,
    ) -> SearchInfo:
        """A new search holding the path from the root to ``node_id`` and the node's whole
        subtree (renumbered, statistics recomputed), with a fresh budget.
        ``SearchInfo.forked_from.copied_as`` is the node's id in the new search."""
        with self._open(search_id) as (conn, record, tree):
            self._check_node(tree, search_id, node_id)
            settings = settings or record.settings
            fork = forked_record(
                record,
                node_id,
                settings=settings,
                budget=budget or budgets.default_budget(settings),
                label=label,
                now=self._clock(),
            )
            repo.insert_search(conn, fork)
            keep = sorted({*tree.ancestors(node_id), *tree.subtree(node_id)})
            rows = repo.full_nodes(conn, search_id, keep)
            for new_id, node, stats in fork_rows([rows[i] for i in keep]):
                repo.insert_node_row(conn, fork.id, new_id, node, **stats)
            # the re-measurements go along: the copied kernels keep the rewards they earned
            renumbered = {old: new for new, old in enumerate(keep)}
            for taken in repo.measurements(conn, search_id, keep):
                repo.insert_measurement(
                    conn, fork.id, taken.model_copy(update={"node_id": renumbered[taken.node_id]})
                )
        return self.get_search(fork.id)

    def export(self, search_id: str) -> SearchExport:
        """Everything about a search; ``.model_dump_json()`` writes it."""
        with self._open(search_id) as (conn, record, tree):
            rows = repo.full_nodes(conn, search_id)
            return SearchExport(
                search=search_info(conn, record, tree, self._clock()),
                nodes=[node_view(rows[node.id], node) for node in tree.nodes],
                measurements=repo.measurements(conn, search_id),
            )

    # -- reading the tree --------------------------------------------------------------------

    def get_tree(self, search_id: str) -> TreeView:
        with self._open(search_id) as (conn, record, tree):
            info = search_info(conn, record, tree, self._clock())
            return TreeView(search=info, nodes=[node.summary() for node in tree.nodes])

    def get_node(self, search_id: str, node_id: int) -> NodeView:
        with self._open(search_id) as (conn, _, tree):
            self._check_node(tree, search_id, node_id)
            return node_view(repo.full_nodes(conn, search_id, [node_id])[node_id], tree[node_id])

    # -- selection ---------------------------------------------------------------------------

    def select_node(
        self, search_id: str, *, author: str | None = None, holder: str | None = None
    ) -> Selection:
        """The node to expand next (UCT with virtual loss), the step to take and its context.
        The node carries virtual loss, and holds one step of the budget, until a step on it is
        recorded, ``release`` is called, or ``lease_timeout_s`` passes. A ``holder`` (a client
        connection) keeps one selection per search and author: its earlier one is given back."""
        with self._open(search_id) as (conn, record, tree):
            settings = record.settings
            now = self._clock()
            leases.purge_expired(conn, search_id, now)
            if holder is not None:
                leases.give_back_earlier(conn, search_id, holder, author)
            held = leases.active(conn, search_id, now)
            budgets.check(record, len(held), now)
            start = 0
            if record.forked_node is not None:  # a fork continues from the node it was made at
                start = repo.copy_of(conn, search_id, record.forked_node)
            node_id = tree.select([lease.node_id for lease in held], start)
            pending_small = sum(
                1 for lease in held if lease.node_id == node_id and lease.action is Action.SMALL
            )
            action, reason = choose_action(record, tree, node_id, pending_small)
            expires_at = now + settings.lease_timeout_s
            leases.add(
                conn,
                search_id,
                node_id,
                action,
                author=author,
                holder=holder,
                claimed=False,
                now=now,
                expires_at=expires_at,
            )
            repo.add_usage(conn, search_id, now, selections=1)
            memory, pool = step_context(conn, search_id, tree, node_id, action, settings)
            row = repo.full_nodes(conn, search_id, [node_id])[node_id]
            return Selection(
                search_id=search_id,
                node=node_view(row, tree[node_id]),
                action=action,
                reason=reason,
                working_memory=memory,
                pool=pool,
                lease_expires_at=expires_at,
                usage=budgets.usage(record, len(held) + 1, now),
                budget=record.budget,
            )

    def step_context(
        self, search_id: str, node_id: int, action: Action
    ) -> tuple[list[MemoryEntry], list[PoolEntry]]:
        """The working memory (small) or pool (large) a step from ``node_id`` would see, without
        selecting the node: no lease, no virtual loss, no budget. For rendering a prompt about a
        node the caller already holds."""
        with self._open(search_id) as (conn, record, tree):
            self._check_node(tree, search_id, node_id)
            if action is Action.SMALL and tree[node_id].action is Action.ROOT:
                raise InvalidStep(
                    "node 0 is the root: it holds no kernel, so a small step cannot start there; "
                    "take a large step (regenerate) from it"
                )
            if action is Action.ROOT:
                raise InvalidStep("a step is small or large; 'root' is not a step")
            return step_context(conn, search_id, tree, node_id, action, record.settings)

    def release(self, search_id: str, node_id: int, *, holder: str | None = None) -> bool:
        """Give back a selection nobody will act on (the holder's own first); False when the
        node held none."""
        with self._open(search_id) as (conn, _, tree):
            self._check_node(tree, search_id, node_id)
            return leases.release_unclaimed(conn, search_id, node_id, holder) > 0

    def release_holder(self, holder: str) -> int:
        """Give back every selection a client holds, in every search (it went away); steps it
        started go on evaluating and are recorded. Returns how many were given back."""
        with self._lock, self.store.connect() as conn:
            return leases.release_holder(conn, holder)

    def leases(self, search_id: str, *, holder: str | None = None) -> list[LeaseView]:
        """The search's outstanding selections and evaluations, oldest first."""
        with self._open(search_id) as (conn, _, _):
            now = self._clock()
            return [
                LeaseView.of(lease, holder=holder, now=now)
                for lease in leases.active(conn, search_id, now)
            ]

    def add_tokens(self, search_id: str, tokens: int) -> Usage:
        """Count tokens spent outside a step (the token budget counts what callers report)."""
        with self._open(search_id) as (conn, _, _):
            now = self._clock()
            repo.add_usage(conn, search_id, now, tokens=tokens)
            in_flight = len(leases.active(conn, search_id, now))
            return budgets.usage(self._record(conn, search_id), in_flight, now)

    # -- the best kernel ---------------------------------------------------------------------

    async def best_kernel(
        self,
        search_id: str,
        *,
        remeasure: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> BestKernel:
        """The best correct kernel: the one with the lowest median runtime over every
        measurement, which is the tree's best node. ``remeasure`` first evaluates the
        ``remeasure_top_k`` candidates with the highest reward ``remeasure_count`` more times
        (stored, so their rewards and later calls count them too)."""
        with self._open(search_id) as (conn, record, tree):
            settings = record.settings
            top = tree.top_correct(settings.remeasure_top_k)
            codes = repo.codes(conn, search_id, top)
            task = self._task(record)
        if remeasure and top:
            judge = self._require_judge()
            for node_id in top:
                for _ in range(settings.remeasure_count):
                    result = await judge.evaluate(
                        task,
                        codes[node_id],
                        on_progress=on_progress,
                        precision=settings.precision,
                        ops=settings.ops,
                    )
                    taken = measurement(node_id, result, settings, self._clock())
                    with self._lock, self.store.connect() as conn:
                        repo.insert_measurement(conn, search_id, taken)
                        repo.add_usage(conn, search_id, self._clock(), evaluations=1)
        with self._open(search_id) as (conn, record, tree):
            measured = repo.measurements(conn, search_id)
            chosen, decided_by, candidates = decide(tree, top, measured)
            node = None
            if chosen is not None:
                node = node_view(repo.full_nodes(conn, search_id, [chosen])[chosen], tree[chosen])
            return BestKernel(
                search_id=search_id, node=node, decided_by=decided_by, candidates=candidates
            )
