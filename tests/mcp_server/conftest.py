"""Fixtures for the MCP server: settings over a temporary home and the CPU judge, one workbench
and one in-memory client per module (the judge starts once), and the kernels the tests send."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from adaexplore_mcp.app import open_app
from adaexplore_mcp.config import Settings
from adaexplore_mcp.config.llm import LLMSettings
from adaexplore_mcp.judge import EvalResult
from adaexplore_mcp.judge.settings import RemoteJudgeSettings
from adaexplore_mcp.mcp_server import Workbench, build_server
from adaexplore_mcp.mcp_server.settings import McpSettings
from adaexplore_mcp.memory.settings import MemorySettings
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.tasks import Task, bundled_solution
from tests.conftest import cpu_settings

GELU = bundled_solution("gelu") or ""
# tl.arange needs a power-of-two range: a compile error on the interpreter and on a GPU
GELU_COMPILE_ERROR = GELU.replace("tl.arange(0, BLOCK_SIZE)", "tl.arange(0, 1000)")
# a kernel whose module takes seconds to load: an evaluation long enough to cancel, that ends
GELU_SLOW_START = "import time\n\ntime.sleep(4)\n" + GELU
assert GELU and GELU_COMPILE_ERROR != GELU


def make_settings(home: Path, **overrides: Any) -> Settings:
    """Everything explicit, so no ADAEXPLORE_* variable of the machine leaks in."""
    values: dict[str, Any] = {
        "home": home,
        "judge": cpu_settings(workers_per_device=2, timeout_s=60),
        "remote": RemoteJudgeSettings(),
        "llm": LLMSettings(),
        "memory": MemorySettings(),
        # p_large=0: below its quota a node gets a small step, so the flow is predictable
        "search": SearchSettings(seed=3, p_large=0.0, max_steps=20),
        "mcp": McpSettings(),
    }
    return Settings(**(values | overrides))


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Workbench:
    return Workbench(open_app(make_settings(tmp_path_factory.mktemp("mcp-home"))))


@pytest.fixture(scope="module")
async def client(bench: Workbench) -> AsyncIterator[Client]:
    async with Client(build_server(bench)) as connected:
        yield connected


class StubJudge:
    """A judge that fails the way it is told to, or answers with one result."""

    def __init__(self, error: Exception | None = None, result: EvalResult | None = None) -> None:
        self.error = error
        self.result = result
        self.started = 0
        self.closed = 0

    @property
    def devices(self) -> list[str]:
        return ["stub"]

    async def __aenter__(self) -> StubJudge:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def start(self) -> None:
        self.started += 1

    async def close(self) -> None:
        self.closed += 1

    async def evaluate(self, task: Task, code: str, **_: Any) -> EvalResult:
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result.model_copy(update={"task": task.name, "task_hash": task.hash})

    async def lint(self, task: Task, **_: Any) -> Any:
        raise NotImplementedError

    def versions(self) -> dict[str, str]:
        return {}


def text(result: Any) -> str:
    """The text of a tool result's first content block."""
    return result.content[0].text
