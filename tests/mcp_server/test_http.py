"""Streamable HTTP under uvicorn: the token, the health endpoint, the bind check, and the real
`adaexplore-mcp serve --transport http` command."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from adaexplore_mcp.app import open_app
from adaexplore_mcp.mcp_server import HttpServer, Workbench, build_server, http_app
from adaexplore_mcp.mcp_server.http import check_bind
from adaexplore_mcp.mcp_server.settings import McpSettings
from tests.conftest import run_cli
from tests.mcp_server.conftest import make_settings

TOKEN = "test-token-0123456789"


class Served:
    def __init__(self, url: str, bench: Workbench) -> None:
        self.url = url
        self.base = url.removesuffix("/mcp")
        self.bench = bench


def serve_in_thread(home: Path, token: str | None) -> Iterator[Served]:
    mcp = McpSettings(port=0, token=token)
    bench = Workbench(open_app(make_settings(home, mcp=mcp)))
    http = HttpServer(http_app(build_server(bench), bench, mcp), mcp)
    thread = threading.Thread(target=lambda: asyncio.run(http.serve()), daemon=True)
    thread.start()
    for _ in range(200):
        try:
            httpx.get(http.url.removesuffix("/mcp") + "/health", timeout=1)
            break
        except httpx.TransportError:
            threading.Event().wait(0.05)
    yield Served(http.url, bench)
    http.stop()
    thread.join(10)


@pytest.fixture(scope="module")
def with_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve_in_thread(tmp_path_factory.mktemp("http-token"), TOKEN)


@pytest.fixture(scope="module")
def without_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve_in_thread(tmp_path_factory.mktemp("http-open"), None)


def test_health_needs_the_token(with_token: Served) -> None:
    refused = httpx.get(with_token.base + "/health")
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in refused.json()["message"]
    wrong = httpx.get(with_token.base + "/health", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    basic = httpx.get(with_token.base + "/health", headers={"Authorization": f"Basic {TOKEN}"})
    assert basic.status_code == 401
    ok = httpx.get(with_token.base + "/health", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200
    health = ok.json()
    assert health["status"] == "ok" and health["judge"] == "not started"
    assert health["store"] == str(with_token.bench.store.path) and health["version"]


def test_the_mcp_endpoint_needs_the_token(with_token: Served) -> None:
    refused = httpx.post(with_token.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert refused.status_code == 401


async def list_tools(
    url: str, headers: dict[str, str], statuses: list[int] | None = None
) -> list[str]:
    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    hooks = {"response": [record]}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30, event_hooks=hooks) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        tasks = await client.call_tool("list_tasks", {"level": 2})
        assert not tasks.is_error
        return [tool.name for tool in (await client.list_tools()).tools]


def test_an_mcp_client_with_the_token(with_token: Served) -> None:
    names = asyncio.run(list_tools(with_token.url, {"Authorization": f"Bearer {TOKEN}"}))
    assert "select_node" in names and "evaluate_kernel" in names


def test_an_mcp_client_without_the_token_is_refused(with_token: Served) -> None:
    statuses: list[int] = []
    # the client reports the refusal as an error inside exception groups
    with pytest.raises(BaseExceptionGroup):
        asyncio.run(list_tools(with_token.url, {}, statuses))
    assert statuses and set(statuses) == {401}


def test_loopback_without_a_token(without_token: Served) -> None:
    assert httpx.get(without_token.base + "/health").status_code == 200
    assert "get_tree" in asyncio.run(list_tools(without_token.url, {}))


def test_no_listening_beyond_loopback_without_a_token(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"refusing to listen on 0\.0\.0\.0 without a token"):
        check_bind(McpSettings(host="0.0.0.0"))
    check_bind(McpSettings(host="0.0.0.0", token="t"))
    check_bind(McpSettings(host="localhost"))
    done = run_cli("serve", "--transport", "http", "--host", "0.0.0.0", home=tmp_path, timeout=60)
    assert done.returncode == 2 and "without a token" in done.stderr


def test_serve_http_command(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADAEXPLORE_")}
    env |= {"ADAEXPLORE_HOME": str(tmp_path), "ADAEXPLORE_JUDGE__DEVICE": "cpu"}
    command = [sys.executable, "-m", "adaexplore_mcp.cli", "serve", "--transport", "http"]
    process = subprocess.Popen(
        [*command, "--port", "0", "--token", TOKEN],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"listening on (http://\S+/mcp) \(a bearer token required\)", line)
        assert found, line
        url = found.group(1)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(url.removesuffix("/mcp") + "/health", headers=auth).status_code == 200
        assert "best_kernel" in asyncio.run(list_tools(url, auth))
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
