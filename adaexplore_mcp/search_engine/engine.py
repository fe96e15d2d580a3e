"""The search engine: one method per MCP tool, every change committed to the store as it happens.

Each method is one or a few short transactions. Nothing is held between calls but caches that
the store can rebuild, so any number of engines in any number of processes can work on one search,
and a killed process loses at most the evaluations it was waiting for.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from sqlite3 import Connection

from adaexplore_mcp.config import SearchSettings
from adaexplore_mcp.judge.interface import Judge
from adaexplore_mcp.judge.pool.local import ProgressCallback
from adaexplore_mcp.search_engine import budget as budgets
from adaexplore_mcp.search_engine import repository as repo
from adaexplore_mcp.search_engine.actions import choose_action
from adaexplore_mcp.search_engine.best import decide, measurement
from adaexplore_mcp.search_engine.context import step_context
from adaexplore_mcp.search_engine.errors import InvalidStep, SearchError, UnknownNode, UnknownSearch
from adaexplore_mcp.search_engine.lineage import fork_rows, forked_record, new_record
from adaexplore_mcp.search_engine.models import (
    Action,
    BestKernel,
    Budget,
    Edit,
    MemoryEntry,
    NodeView,
    PoolEntry,
    SearchExport,
    SearchInfo,
    Selection,
    StepResult,
    TreeView,
    Usage,
)
from adaexplore_mcp.search_engine.patching import apply_edits
from adaexplore_mcp.search_engine.repository import NewNode, SearchRecord
from adaexplore_mcp.search_engine.steps import StepRequest
from adaexplore_mcp.search_engine.tree import Tree
from adaexplore_mcp.search_engine.views import node_view, search_info
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import Task


class SearchEngine:
    """MCTS over kernels in one store. ``settings`` are the defaults for new searches; a search
    keeps the settings it was started (or forked) with. Without a judge the engine can read and
    fork searches but not take steps."""

    def __init__(
        self,
        store: Store,
        judge: Judge | None = None,
        settings: SearchSettings | None = None,
        *,
        clock: Callable[[], float] = time.time,
        cached_trees: int = 16,
    ) -> None:
        self.store = store
        self.judge = judge
        self.settings = settings or SearchSettings()
        self._clock = clock
        self._cached_trees = cached_trees
        self._trees: OrderedDict[str, Tree] = OrderedDict()
        self._tasks: dict[str, Task] = {}
        # callers in this process are serialized here, other processes by the store's write lock
        self._lock = threading.RLock()

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

    def list_searches(self, *, task: str | None = None, limit: int | None = 50) -> list[SearchInfo]:
        """Newest first, optionally only those of one task."""
        with self._lock, self.store.connect() as conn:
            ids = [record.id for record in repo.list_searches(conn, task, limit)]
        return [self.get_search(search_id) for search_id in ids]

    def resume(self, search_id: str) -> SearchInfo:
        """Reopen a search after its process stopped or was killed: outstanding selections are
        dropped (nobody will act on them), the wall clock restarts from now, and the tree is
        reloaded from the store."""
        with self._lock, self.store.connect() as conn:
            self._record(conn, search_id)
            repo.clear_leases(conn, search_id)
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

    def select_node(self, search_id: str, *, author: str | None = None) -> Selection:
        """The node to expand next (UCT with virtual loss), the step to take and its context.
        The node carries virtual loss, and holds one step of the budget, until a step on it is
        recorded, ``release`` is called, or ``lease_timeout_s`` passes."""
        with self._open(search_id) as (conn, record, tree):
            settings = record.settings
            now = self._clock()
            repo.purge_expired(conn, search_id, now)
            leases = repo.active_leases(conn, search_id, now)
            budgets.check(record, len(leases), now)
            node_id = tree.select([lease.node_id for lease in leases], settings)
            pending_small = sum(
                1 for lease in leases if lease.node_id == node_id and lease.action is Action.SMALL
            )
            action, reason = choose_action(record, tree, node_id, pending_small)
            expires_at = now + settings.lease_timeout_s
            repo.add_lease(
                conn,
                search_id,
                node_id,
                action,
                author,
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
                usage=budgets.usage(record, len(leases) + 1, now),
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

    def release(self, search_id: str, node_id: int) -> bool:
        """Give back a selection nobody will act on; False when the node held none."""
        with self._open(search_id) as (conn, _, tree):
            self._check_node(tree, search_id, node_id)
            return repo.release_unclaimed(conn, search_id, node_id) > 0

    def add_tokens(self, search_id: str, tokens: int) -> Usage:
        """Count tokens spent outside a step (the token budget counts what callers report)."""
        with self._open(search_id) as (conn, _, _):
            now = self._clock()
            repo.add_usage(conn, search_id, now, tokens=tokens)
            in_flight = len(repo.active_leases(conn, search_id, now))
            return budgets.usage(self._record(conn, search_id), in_flight, now)

    # -- steps -------------------------------------------------------------------------------

    async def apply_patch(
        self,
        search_id: str,
        node_id: int,
        edits: Sequence[Edit | dict],
        *,
        author: str | None = None,
        note: str | None = None,
        tokens: int = 0,
        on_progress: ProgressCallback | None = None,
    ) -> StepResult:
        """Small step: apply the edits to the node's kernel, evaluate, record the child. A patch
        that does not apply raises ``PatchError`` before anything is evaluated or recorded."""
        edits = [edit if isinstance(edit, Edit) else Edit.model_validate(edit) for edit in edits]
        with self._open(search_id) as (conn, _, tree):
            self._check_node(tree, search_id, node_id)
            if tree[node_id].action is Action.ROOT:
                raise InvalidStep(
                    "node 0 is the root: it stands for the task's reference and holds no kernel "
                    "to patch; write a whole kernel with regenerate(search_id, code)"
                )
            code = repo.codes(conn, search_id, [node_id])[node_id]
        step = StepRequest(
            parent=node_id,
            action=Action.SMALL,
            code=apply_edits(code, edits),
            edits=edits,
            author=author,
            note=note,
            tokens=tokens,
        )
        return await self._take(search_id, step, on_progress)

    async def regenerate(
        self,
        search_id: str,
        code: str,
        node_id: int | None = None,
        *,
        author: str | None = None,
        note: str | None = None,
        tokens: int = 0,
        on_progress: ProgressCallback | None = None,
    ) -> StepResult:
        """Large step: evaluate a whole new kernel and record it as a child of ``node_id`` (the
        root when omitted)."""
        parent = 0 if node_id is None else node_id
        with self._open(search_id) as (_, _, tree):
            self._check_node(tree, search_id, parent)
        if not code.strip():
            raise InvalidStep("the kernel is empty; send the whole source defining ModelNew")
        step = StepRequest(
            parent=parent, action=Action.LARGE, code=code, author=author, note=note, tokens=tokens
        )
        return await self._take(search_id, step, on_progress)

    async def _take(
        self, search_id: str, step: StepRequest, on_progress: ProgressCallback | None
    ) -> StepResult:
        judge = self._require_judge()
        with self._open(search_id) as (conn, record, _):
            task = self._task(record)
            settings = record.settings
            now = self._clock()
            expires_at = now + settings.lease_timeout_s
            lease_id = repo.claim_lease(conn, search_id, step.parent, now, expires_at)
            if lease_id is None:  # a step without select_node: it must fit the budget itself
                repo.purge_expired(conn, search_id, now)
                budgets.check(record, len(repo.active_leases(conn, search_id, now)), now)
                lease_id = repo.add_lease(
                    conn,
                    search_id,
                    step.parent,
                    step.action,
                    step.author,
                    claimed=True,
                    now=now,
                    expires_at=expires_at,
                )
            else:  # the selection reserved the step; time and tokens may have run out since
                budgets.check(record, 0, now, steps=False)
        try:
            result = await judge.evaluate(
                task, step.code, on_progress=on_progress, precision=record.settings.precision
            )
        except BaseException:
            # cancelled, or the judge could not run: nothing was recorded, so only the lease goes
            with self._lock, self.store.connect() as conn:
                repo.delete_lease(conn, lease_id)
            raise
        node = step.judged(result, settings)
        # the node, its backed-up statistics, the lease and the usage: one transaction
        with self._open(search_id) as (conn, _, tree):
            best_before = tree[tree.best_id].reward if tree.best_id is not None else None
            now = self._clock()
            node_id = repo.insert_node(conn, search_id, node, now)
            repo.delete_lease(conn, lease_id)
            repo.add_usage(conn, search_id, now, steps=1, evaluations=1, tokens=step.tokens)
        with self._open(search_id) as (conn, record, tree):
            now = self._clock()
            spent = budgets.exhausted(record, 0, now)
            return StepResult(
                search_id=search_id,
                node=node_view(repo.full_nodes(conn, search_id, [node_id])[node_id], tree[node_id]),
                improved=best_before is None or node.reward > best_before,  # type: ignore[operator]
                best_node_id=tree.best_id,
                usage=budgets.usage(record, len(repo.active_leases(conn, search_id, now)), now),
                exhausted=spent[0] if spent else None,
            )

    # -- the best kernel ---------------------------------------------------------------------

    async def best_kernel(
        self,
        search_id: str,
        *,
        remeasure: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> BestKernel:
        """The best correct kernel, decided on the median runtime over every measurement of the
        ``remeasure_top_k`` candidates with the highest reward. ``remeasure`` first evaluates
        each candidate ``remeasure_count`` more times (stored, so later calls count them too)."""
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
                    )
                    taken = measurement(node_id, result, settings, self._clock())
                    with self._lock, self.store.connect() as conn:
                        repo.insert_measurement(conn, search_id, taken)
                        repo.add_usage(conn, search_id, self._clock(), evaluations=1)
        with self._open(search_id) as (conn, record, tree):
            measured = repo.measurements(conn, search_id, top)
            chosen, decided_by, candidates = decide([tree[i] for i in top], measured)
            node = None
            if chosen is not None:
                node = node_view(repo.full_nodes(conn, search_id, [chosen])[chosen], tree[chosen])
            return BestKernel(
                search_id=search_id, node=node, decided_by=decided_by, candidates=candidates
            )

    # -- internals ---------------------------------------------------------------------------

    @contextmanager
    def _open(self, search_id: str) -> Iterator[tuple[Connection, SearchRecord, Tree]]:
        """A transaction with the search's record and its tree brought up to date."""
        with self._lock, self.store.connect() as conn:
            record = self._record(conn, search_id)
            yield conn, record, self._tree(conn, search_id)

    def _record(self, conn: Connection, search_id: str) -> SearchRecord:
        record = repo.get_search(conn, search_id)
        if record is None:
            raise UnknownSearch(search_id, repo.recent_search_ids(conn))
        return record

    def _tree(self, conn: Connection, search_id: str) -> Tree:
        # taken out while it is refreshed: a refresh that fails half-way is not put back, and the
        # next call loads the tree afresh. Refreshed at the start of a transaction only, so it
        # never holds rows a rollback could take away.
        tree = self._trees.pop(search_id, None) or Tree()
        tree.append_rows(repo.nodes_after(conn, search_id, tree.last_id))
        self._trees[search_id] = tree  # most recently used last
        while len(self._trees) > self._cached_trees:
            self._trees.popitem(last=False)
        return tree

    def _task(self, record: SearchRecord) -> Task:
        task = self._tasks.get(record.id)
        if task is None:
            task = self._tasks[record.id] = Task.model_validate_json(record.task)
        return task

    def _require_judge(self) -> Judge:
        if self.judge is None:
            raise SearchError(
                "this search engine has no judge, so it can read searches but not evaluate; "
                "construct SearchEngine(store, judge=...)"
            )
        return self.judge

    @staticmethod
    def _check_node(tree: Tree, search_id: str, node_id: int) -> None:
        if node_id not in tree:
            raise UnknownNode(search_id, node_id, len(tree.nodes))
