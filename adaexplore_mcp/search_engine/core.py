"""What every part of the search engine stands on: the store, the one lock of this process, the
clock, and the caches of trees and tasks that the store can always rebuild."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from sqlite3 import Connection

from adaexplore_mcp.judge.interface import Judge
from adaexplore_mcp.search_engine import repository as repo
from adaexplore_mcp.search_engine.errors import SearchError, UnknownNode, UnknownSearch
from adaexplore_mcp.search_engine.repository import SearchRecord
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.search_engine.tree import Tree
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import Task


class EngineCore:
    """The store and caches behind ``SearchEngine`` (see engine.py)."""

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

    @contextmanager
    def _open(self, search_id: str) -> Iterator[tuple[Connection, SearchRecord, Tree]]:
        """A transaction with the search's record and its tree brought up to date."""
        with self._lock, self.store.connect() as conn:
            record = self._record(conn, search_id)
            yield conn, record, self._tree(conn, record)

    def _record(self, conn: Connection, search_id: str) -> SearchRecord:
        record = repo.get_search(conn, search_id)
        if record is None:
            raise UnknownSearch(search_id, repo.recent_search_ids(conn))
        return record

    def _tree(self, conn: Connection, record: SearchRecord) -> Tree:
        # taken out while it is refreshed: a refresh that fails half-way is not put back, and the
        # next call loads the tree afresh. Refreshed at the start of a transaction only, so it
        # never holds rows a rollback could take away.
        search_id = record.id
        tree = self._trees.pop(search_id, None) or Tree(record.settings)
        tree.refresh(
            repo.nodes_after(conn, search_id, tree.last_id),
            repo.measurements_after(conn, search_id, tree.last_measurement_id),
        )
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
