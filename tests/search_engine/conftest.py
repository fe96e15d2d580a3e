"""Fixtures for the search engine: a fresh store, the fake judge, an engine and a settable clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore_mcp.search_engine import SearchEngine
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.store import Store
from tests.search_engine.fakes import FakeJudge


class Clock:
    """Time that moves only when told to."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "search.sqlite3")


@pytest.fixture
def judge() -> FakeJudge:
    return FakeJudge()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def settings() -> SearchSettings:
    return SearchSettings(seed=7, max_steps=50)


@pytest.fixture
def engine(store: Store, judge: FakeJudge, settings: SearchSettings, clock: Clock) -> SearchEngine:
    return SearchEngine(store, judge, settings, clock=clock)
