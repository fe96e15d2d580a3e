"""What `adaexplore-mcp serve` imports before it has answered `initialize` and `tools/list`.

An MCP client waits on the process it started for `initialize`; on a GPU host torch and triton
alone take seconds to import. The server must answer without them and without the modules only
a tool call needs (numpy for ranking rules, jinja2 for rendering prompts, the driver, the LLM
clients, the reports), nor the parts of the project that only serve a tool call: the judge's
local pool, its wire protocol and sandbox, the skill memory and the search engine (the
workbench builds them on the first tool call that needs one). Pinned by module, not by time: a
fresh interpreter builds the server as `serve` does, answers both requests through the SDK's
client, and lists what it imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# Imported by a tool call, or by another command, never by answering initialize and tools/list.
DEFERRED = (
    "torch",
    "triton",
    "numpy",
    "jinja2",
    "anthropic",
    "openai",
    "adaexplore_mcp.driver",
    "adaexplore_mcp.llm",
    "adaexplore_mcp.report",
    "adaexplore_mcp.judge.service.client",
    "adaexplore_mcp.mcp_server.http",
    # the judge beyond its result models and exceptions
    "adaexplore_mcp.judge.interface",
    "adaexplore_mcp.judge.pool.local",
    "adaexplore_mcp.judge.pool.lane",
    "adaexplore_mcp.judge.outcomes",
    "adaexplore_mcp.judge.wire.subject",
    "adaexplore_mcp.judge.wire.jobs",
    "adaexplore_mcp.judge.sandbox",
    "adaexplore_mcp.judge.static_checks",
    # the memory, the search engine and the workbench's domain beyond their models
    "adaexplore_mcp.memory.skill_memory",
    "adaexplore_mcp.memory.retrieval",
    "adaexplore_mcp.search_engine.engine",
    "adaexplore_mcp.search_engine.stepping",
    "adaexplore_mcp.mcp_server.domain",
    "adaexplore_mcp.mcp_server.searches",
)

SERVE_AND_LIST = """
import json, sys
import anyio
from mcp import Client
from adaexplore_mcp.cli.serve import serve_command  # what `serve` imports before it runs
from adaexplore_mcp.cli.common import settings_with
from adaexplore_mcp.app import open_app
from adaexplore_mcp.mcp_server import Workbench, build_server

async def main():
    settings = settings_with(None, judge_url=None, judge_token=None)
    server = build_server(Workbench(open_app(settings)))
    async with Client(server) as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
    deferred = json.loads(sys.argv[1])
    loaded = [name for name in deferred if name in sys.modules]
    print(json.dumps({"tools": len(tools), "loaded": loaded}))

anyio.run(main)
"""


def test_initialize_and_tools_list_import_nothing_heavy(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADAEXPLORE_")}
    env["ADAEXPLORE_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", SERVE_AND_LIST, json.dumps(DEFERRED)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["tools"] >= 15
    assert answer["loaded"] == [], (
        f"answering initialize and tools/list imported {answer['loaded']}; import them where "
        "a tool needs them (docs/mcp.md, 'Starting fast')"
    )
