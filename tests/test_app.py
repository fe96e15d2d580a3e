"""The composition root: one store per app, each part built once over it, the starter rules
installed by the root and not by the memory, and only what the app opened closed by it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import adaexplore_mcp.judge
from adaexplore_mcp.app import App, open_app, open_existing_store
from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge import RemoteJudge
from adaexplore_mcp.judge.settings import RemoteJudgeSettings
from adaexplore_mcp.memory import Provenance, RuleStatus, SkillMemory
from adaexplore_mcp.memory.settings import MemorySettings
from adaexplore_mcp.store import Store
from tests.mcp_server.conftest import StubJudge, make_settings
from tests.memory.conftest import GLOBAL_RULE, ScriptedDistiller, global_read_failure


def starter_rules(memory: SkillMemory) -> list[int]:
    return [r.id for r in memory.rules() if r.provenance is Provenance.STARTER]


def test_every_part_is_built_once_over_the_one_store(tmp_path: Path) -> None:
    app = open_app(make_settings(tmp_path), judge=StubJudge())
    assert app.store.path == app.settings.database_path
    assert app.memory is app.memory and app.judge is app.judge and app.engine is app.engine
    assert app.engine.store is app.store and app.engine.judge is app.judge
    assert app.lessons is app.lessons


def test_the_root_installs_the_starter_rules_and_the_memory_alone_does_not(
    tmp_path: Path,
) -> None:
    bare = SkillMemory(Store(tmp_path / "bare.sqlite3"), MemorySettings(starter=True))
    assert bare.rules() == []

    app = open_app(make_settings(tmp_path / "home"))
    installed = starter_rules(app.memory)
    assert installed and all(r.status is RuleStatus.ACTIVE for r in app.memory.rules())
    # a second app over the same home installs nothing more
    assert starter_rules(open_app(make_settings(tmp_path / "home")).memory) == installed

    off = make_settings(tmp_path / "off", memory=MemorySettings(starter=False))
    assert open_app(off).memory.rules() == []


def test_the_app_opens_the_judge_the_settings_name_over_its_store_and_closes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[tuple[Settings, Store]] = []
    stub = StubJudge()

    def open_judge(settings: Settings, *, open_store: Callable[[], Store]) -> Any:
        opened.append((settings, open_store()))
        return stub

    monkeypatch.setattr(adaexplore_mcp.judge, "open_judge", open_judge)

    async def use() -> None:
        async with open_app(make_settings(tmp_path)) as app:
            await app.judge.start()
            assert opened == [(app.settings, app.store)]

    asyncio.run(use())
    assert (stub.started, stub.closed) == (1, 1)


def test_nothing_is_opened_before_it_is_asked_for_and_a_judge_service_needs_no_store(
    tmp_path: Path,
) -> None:
    remote = RemoteJudgeSettings(url="http://127.0.0.1:9")
    app = open_app(make_settings(tmp_path, remote=remote))
    assert isinstance(app.judge.inner, RemoteJudge)
    assert not app.settings.database_path.exists()
    assert app.store is app.store and app.settings.database_path.is_file()


def test_a_lent_judge_is_left_to_its_lender(tmp_path: Path) -> None:
    lent = StubJudge()

    async def use() -> None:
        async with open_app(make_settings(tmp_path), judge=lent) as app:
            await app.judge.start()
            assert app.judge.inner is lent

    asyncio.run(use())
    assert (lent.started, lent.closed) == (1, 0)


def test_a_lent_distiller_distils_unless_the_app_is_told_not_to(tmp_path: Path) -> None:
    report = global_read_failure("gelu", "SCALE", 3)

    def app_in(home: str, **parts: Any) -> App:
        settings = make_settings(tmp_path / home, memory=MemorySettings(starter=False))
        return open_app(settings, **parts)

    unused = ScriptedDistiller({"SCALE": GLOBAL_RULE})
    quiet = app_in("quiet", distil=False, distiller=unused)
    assert asyncio.run(quiet.memory.add_failure(report)).outcome == "no_rule"
    assert unused.extract_calls == []

    distiller = ScriptedDistiller({"SCALE": GLOBAL_RULE})
    filed = asyncio.run(app_in("loud", distiller=distiller).memory.add_failure(report))
    assert filed.outcome != "no_rule" and len(distiller.extract_calls) == 1


def test_a_reader_never_creates_a_database(tmp_path: Path) -> None:
    database = tmp_path / "db.sqlite3"
    assert open_existing_store(database) is None and not database.exists()
    Store(database)
    store = open_existing_store(database)
    assert store is not None and store.path == database


def test_a_command_works_with_the_judge_itself_started_and_then_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adaexplore_mcp.cli.judging import with_judge

    stub = StubJudge()
    monkeypatch.setattr(adaexplore_mcp.judge, "open_judge", lambda settings, **_: stub)
    seen: list[Any] = []

    async def work(judge: Any) -> str:
        seen.append((judge, judge.started))
        return "done"

    # not a wrapper: a problem set sizes its concurrency from the judge's own lanes
    assert with_judge(make_settings(tmp_path), work) == "done"
    assert seen == [(stub, 1)] and stub.closed == 1
