"""Several processes on one search in one SQLite file."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
from collections import Counter

from adaexplore_mcp.search_engine import Budget, SearchEngine
from adaexplore_mcp.search_engine.settings import SearchSettings
from tests.search_engine.fakes import FakeJudge, kernel, toy_task
from tests.search_engine.loops import check_consistent, search_loop, select_once

SPAWN = mp.get_context("spawn")


def test_workers_in_several_processes_lose_no_node_and_keep_the_tree_consistent(store):
    settings = SearchSettings(seed=5, p_large=0.3, small_quota=2)
    watcher = SearchEngine(store, FakeJudge(), settings)
    sid = watcher.start_search(toy_task(), budget=Budget(max_steps=60)).id
    watcher.get_tree(sid)  # the watcher's cache must follow what the others write
    # on a busy machine a worker still starting found the budget spent by the others; and on
    # two cores, past the barrier, three workers spent 60 steps of 5 ms each before the fourth
    # was scheduled: at 50 ms a step the budget lasts ten times as long
    with SPAWN.Manager() as manager, SPAWN.Pool(4) as pool:
        start = manager.Barrier(4)
        made = pool.starmap(search_loop, [(str(store.path), sid, w, 0.05, start) for w in range(4)])
    created = [node_id for ids in made for node_id in ids]
    assert sorted(created) == list(range(1, 61))  # no node lost, none counted twice
    assert all(ids for ids in made), "every worker took steps"
    assert check_consistent(store.path, sid) == 61
    info = watcher.get_search(sid)
    assert info.usage.steps == 60 and info.usage.in_flight == 0 and info.exhausted == "steps"
    cached = watcher.get_tree(sid)
    fresh = SearchEngine(store).get_tree(sid)
    assert cached.nodes == fresh.nodes and cached.nodes[0].visits == 60
    authors = Counter(node.author for node in fresh.nodes[1:])
    assert len(authors) == 4
    actions = Counter(node.action.value for node in fresh.nodes[1:])
    assert actions["small"] > 0 and actions["large"] > 0


def test_processes_selecting_at_once_are_handed_different_nodes(store):
    engine = SearchEngine(store, FakeJudge(), SearchSettings(seed=1))
    sid = engine.start_search(toy_task()).id
    for i in range(4):
        asyncio.run(engine.regenerate(sid, kernel(f"class ModelNew:\n    v = {i}", speed=2.0)))
    results = SPAWN.Queue()
    workers = [
        SPAWN.Process(target=select_once, args=(str(store.path), sid, results)) for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    handed = sorted(results.get(timeout=5) for _ in workers)
    assert handed == [1, 2, 3, 4]
    assert engine.get_search(sid).usage.in_flight == 4
