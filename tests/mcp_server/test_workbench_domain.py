"""The workbench builds its memory, judge and search engine on the first tool call that needs
one (``domain.py``), once, even when the SDK runs several first calls in worker threads."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from mcp import Client

from adaexplore_mcp.app import open_app
from adaexplore_mcp.mcp_server import Workbench, build_server, domain
from tests.mcp_server.conftest import make_settings

pytestmark = pytest.mark.anyio


def test_concurrent_first_calls_build_one_domain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = []
    build = domain.build_domain

    def slow_build(*args, **kwargs):
        # long enough that every thread arrives while the first build is under way
        time.sleep(0.2)
        built.append(threading.get_ident())
        return build(*args, **kwargs)

    monkeypatch.setattr(domain, "build_domain", slow_build)
    bench = Workbench(open_app(make_settings(tmp_path)))
    with ThreadPoolExecutor(4) as pool:
        engines = list(pool.map(lambda _: bench.engine, range(4)))
    assert len(built) == 1
    assert all(engine is engines[0] for engine in engines)
    assert bench.memory is bench.prompts._memory and bench.searches.engine is bench.engine


async def test_listing_tasks_builds_nothing_and_closing_an_unbuilt_workbench_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("built the domain for a call that does not need it")

    monkeypatch.setattr(domain, "build_domain", refuse)
    bench = Workbench(open_app(make_settings(tmp_path)))
    async with Client(build_server(bench)) as client:
        listed = await client.call_tool("list_tasks", {})
        assert not listed.is_error
        task = await client.call_tool("get_task", {"task": "gelu"})
        assert not task.is_error
        assert bench.health().judge == "not started"
    # leaving the client ran the server's lifespan, which closes the workbench
