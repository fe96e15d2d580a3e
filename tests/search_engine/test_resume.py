"""A search whose process is killed mid-way reopens consistently and runs to its budget."""

from __future__ import annotations

import multiprocessing as mp
import time

from adaexplore_mcp.search_engine import Budget, SearchEngine
from adaexplore_mcp.search_engine.settings import SearchSettings
from tests.search_engine.fakes import FakeJudge, toy_task
from tests.search_engine.loops import check_consistent, search_loop

SPAWN = mp.get_context("spawn")


def test_a_search_killed_mid_way_resumes_to_its_budget(store):
    engine = SearchEngine(store, FakeJudge(), SearchSettings(seed=9, p_large=0.3))
    sid = engine.start_search(toy_task(), budget=Budget(max_steps=30)).id
    worker = SPAWN.Process(target=search_loop, args=(str(store.path), sid, 0, 0.05))
    worker.start()
    deadline = time.monotonic() + 60
    while engine.get_search(sid).node_count < 9:
        assert time.monotonic() < deadline and worker.is_alive()
        time.sleep(0.01)
    worker.kill()  # SIGKILL: no cleanup of any kind
    worker.join(10)
    reopened = SearchEngine(store, FakeJudge())
    before = check_consistent(store.path, sid)
    assert 9 <= before < 31
    resumed = reopened.resume(sid)
    assert resumed.usage.in_flight == 0 and resumed.node_count == before
    assert resumed.usage.steps == before - 1
    made = search_loop(str(store.path), sid, 1)
    assert len(made) == 31 - before
    assert check_consistent(store.path, sid) == 31
    assert reopened.get_search(sid).exhausted == "steps"
