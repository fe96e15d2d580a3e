"""The composition root: the one place that opens the store and builds the parts that share it.

    async with open_app(settings) as app:
        app.memory.get_rules("tl.dot")            # the rule memory, starter rules installed
        app.engine.start_search(task)             # the search engine over app.judge

Every part is built on first use, the store included: the memory, the judge, the search engine
and the performance lessons import most of the project, and ``serve`` must answer
``initialize`` without waiting for that; a command that only talks to a judge service creates
no database. The store is opened once, by whichever part asks first (the workbench asks at
once, so a database this version cannot read stops ``serve`` before it answers anything).

Every command, the MCP server's workbench and the driver take their parts from an ``App``; only
the judge service (its own process) opens its own store.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Self

from adaexplore_mcp.config import Settings
from adaexplore_mcp.store import Store

if TYPE_CHECKING:
    from adaexplore_mcp.judge import Judge
    from adaexplore_mcp.judge.lazy import LazyJudge
    from adaexplore_mcp.memory import Distiller, PerformanceMemory, SkillMemory
    from adaexplore_mcp.search_engine import SearchEngine

log = logging.getLogger(__name__)


class App:
    """The parts of one ``Settings`` over one store; nothing is opened or built until a part is
    asked for. Build it with ``open_app``.

    ``judge`` replaces the one the settings name (the driver is lent one, tests lend stubs).
    ``distil=False`` builds a memory that distils nothing and opens no model (for commands
    that file no failure); ``distiller`` replaces the model ``settings.llm`` names; ``environ``
    is where that model's API key is read (default: the process environment). Parts lent to
    the app belong to the lender: ``close`` stops only the judge the app opened itself."""

    def __init__(
        self,
        settings: Settings,
        *,
        judge: Judge | None = None,
        distil: bool = True,
        distiller: Distiller | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self._lent_judge = judge
        self._distil = distil
        self._lent_distiller = distiller
        self._environ = environ

    @cached_property
    def store(self) -> Store:
        """The database under ``settings.home``, created and migrated if need be."""
        return Store(self.settings.database_path)

    @cached_property
    def memory(self) -> SkillMemory:
        """The rule memory, with the starter rules installed when the settings ask for them
        (once per version of the starter files)."""
        from adaexplore_mcp.memory import SkillMemory, install_starter

        memory = SkillMemory(self.store, self.settings.memory, self._distiller())
        if self.settings.memory.starter:
            install_starter(memory, self.store)
        return memory

    @cached_property
    def judge(self) -> LazyJudge:
        """The lent judge, or the one the settings name (``open_judge``); either starts on its
        first evaluation, so building it needs no GPU."""
        from adaexplore_mcp.judge import open_judge
        from adaexplore_mcp.judge.lazy import LazyJudge

        inner = self._lent_judge
        if inner is None:
            inner = open_judge(self.settings, open_store=lambda: self.store)
        return LazyJudge(inner)

    @cached_property
    def engine(self) -> SearchEngine:
        from adaexplore_mcp.search_engine import SearchEngine

        return SearchEngine(self.store, self.judge, self.settings.search)

    @cached_property
    def lessons(self) -> PerformanceMemory:
        from adaexplore_mcp.memory import PerformanceMemory

        return PerformanceMemory(self.store, self.settings.memory)

    async def close(self) -> None:
        """Stops the judge this app opened, if it started; a lent judge is left to its lender."""
        if self._lent_judge is None and "judge" in self.__dict__:
            await self.judge.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _distiller(self) -> Distiller | None:
        """The lent distiller; else a model from ``settings.llm`` when one is configured, or
        none (rules then come from agents only)."""
        memory, llm = self.settings.memory, self.settings.llm
        if not (self._distil and memory.distill_with_llm):
            return None
        if self._lent_distiller is not None:
            return self._lent_distiller
        if llm.provider is None:
            return None
        from adaexplore_mcp.llm import LLMNotConfigured, open_llm
        from adaexplore_mcp.memory import LLMDistiller

        try:
            return LLMDistiller(open_llm(llm, environ=self._environ))
        except LLMNotConfigured as error:
            log.warning("rules will come from agents only: %s", error)
            return None


# The application of ``settings``: the one entry point, whose arguments are ``App``'s own.
open_app = App


def open_existing_store(database: Path) -> Store | None:
    """The store in ``database`` when that file exists: a reader (a report) never creates an
    empty database."""
    return Store(database) if database.is_file() else None
