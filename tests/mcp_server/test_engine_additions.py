"""The two read-only methods the MCP layer added to SearchEngine: ``task`` and
``step_context``, on the search engine's fake judge."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adaexplore_mcp.search_engine import Action, InvalidStep, SearchEngine, UnknownNode
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.store import Store
from tests.search_engine.fakes import FakeJudge, kernel, toy_task


@pytest.fixture
def engine(tmp_path: Path) -> SearchEngine:
    return SearchEngine(Store(tmp_path / "db.sqlite3"), FakeJudge(), SearchSettings(seed=1))


def test_task_is_the_stored_task(engine: SearchEngine) -> None:
    task = toy_task("stored")
    search = engine.start_search(task)
    assert engine.task(search.id) == task


def test_step_context_matches_a_selection_without_taking_a_lease(engine: SearchEngine) -> None:
    search = engine.start_search(toy_task(), settings=SearchSettings(seed=1, p_large=0.0))
    asyncio.run(engine.regenerate(search.id, kernel("a = 1", speed=2.0)))
    asyncio.run(engine.regenerate(search.id, kernel("b = 2", speed=1.5)))
    asyncio.run(engine.apply_patch(search.id, 1, [{"old_str": "a = 1", "new_str": "a = 3"}]))

    memory, pool = engine.step_context(search.id, 3, Action.SMALL)
    assert [entry.node_id for entry in memory] == [1, 3] and pool == []
    memory, pool = engine.step_context(search.id, 0, Action.LARGE)
    # the best correct kernel leads; near-copies of it stay out of the pool
    assert memory == [] and pool[0].node_id == 1
    assert engine.get_search(search.id).usage.in_flight == 0  # nothing was reserved

    selection = engine.select_node(search.id)
    memory, pool = engine.step_context(search.id, selection.node.id, selection.action)
    assert (memory, pool) == (selection.working_memory, selection.pool)


def test_step_context_refuses_what_no_step_could_be(engine: SearchEngine) -> None:
    search = engine.start_search(toy_task())
    with pytest.raises(InvalidStep, match="large step"):
        engine.step_context(search.id, 0, Action.SMALL)
    with pytest.raises(InvalidStep):
        engine.step_context(search.id, 0, Action.ROOT)
    with pytest.raises(UnknownNode):
        engine.step_context(search.id, 5, Action.LARGE)
