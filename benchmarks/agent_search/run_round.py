"""One round of an agent-driven search, as an MCP client sends it: tool calls over stdio.

    python benchmarks/agent_search/run_round.py rounds/round1.json --state search.tgz --out DIR

A round is a JSON list of tool calls that the agent wrote after reading the answers of the round
before. Each entry names a tool and its arguments; ``code_file`` (under ``kernels/``) and
``patches_file`` (under ``patches/``) fill ``code`` and ``patches``, ``use_search`` fills the
search's id. ``select_and_step`` asks ``select_node`` first and then takes the step the agent
prepared for that selection (``"small:N"`` for a small step on node N, ``"large"``); a selection
it prepared nothing for is released, as an agent that declines a node would do.

The server is the real one (``adaexplore-mcp serve``) over one ADAEXPLORE_HOME, restored from
``--state`` and saved to ``DIR/search.tgz`` after the round, so rounds run on machines that do
not keep files between them. Every answer is written to ``DIR/answers.json``; ``summarize.py``
prints the steps and their verdicts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).parent
STATE_FILE = "agent-search.json"  # the search's id, beside the database


async def call(session: ClientSession, tool: str, args: dict[str, Any]) -> tuple[dict, bool]:
    result = await session.call_tool(tool, args)
    body = result.structured_content
    if body is None:
        body = {"text": "".join(getattr(c, "text", "") for c in result.content)}
    return body, result.is_error


def prepared(action: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    args = dict(action.get("args", {}))
    if "code_file" in action:
        args["code"] = (HERE / "kernels" / action["code_file"]).read_text()
    if "patches_file" in action:
        args["patches"] = json.loads((HERE / "patches" / action["patches_file"]).read_text())
    if action.get("use_search"):
        args["search_id"] = state["search_id"]
    return args


async def run_round(plan: list[dict[str, Any]], home: Path) -> list[dict[str, Any]]:
    state_path = home / STATE_FILE
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADAEXPLORE_")}
    env["ADAEXPLORE_HOME"] = str(home)
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "adaexplore_mcp.cli", "serve"], env=env
    )
    answers: list[dict[str, Any]] = []
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for action in plan:
            if action["tool"] == "select_and_step":
                body, error = await call(session, "select_node", {"search_id": state["search_id"]})
                answers.append({"tool": "select_node", "error": error, "answer": body})
                node = body["node"]["id"]
                key = f"small:{node}" if body["action"] == "small" else "large"
                print(f"select_node -> {key}: {body['reason']}", flush=True)
                if key not in action["choices"]:
                    print(f"  nothing prepared for {key}: released", flush=True)
                    release = {"search_id": state["search_id"], "node_id": node}
                    await call(session, "release", release)
                    continue
                action = dict(action["choices"][key], use_search=True)
            started = time.perf_counter()
            body, error = await call(session, action["tool"], prepared(action, state))
            took = time.perf_counter() - started
            if action["tool"] == "start_search" and not error:
                state["search_id"] = body["id"]
            answers.append({"tool": action["tool"], "error": error, "s": took, "answer": body})
            text = json.dumps(body)
            print(f"{action['tool']} ({took:.1f} s, {len(text)} chars{', error' if error else ''})")
            print("  " + text[: action.get("show", 600)], flush=True)
    state_path.write_text(json.dumps(state))
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("round", type=Path)
    parser.add_argument("--state", type=Path, default=None, help="the search after the last round")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="agent-search-"))
    if args.state is not None and args.state.exists():
        with tarfile.open(args.state) as tar:
            tar.extractall(home, filter="data")
    plan = json.loads(args.round.read_text())
    answers = asyncio.run(run_round(plan, home))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "answers.json").write_text(json.dumps(answers, indent=1))
    with tarfile.open(args.out / "search.tgz", "w:gz") as tar:
        for path in home.iterdir():
            if path.name != "cache":  # compile caches: rebuilt where the next round runs
                tar.add(path, arcname=path.name)


if __name__ == "__main__":
    main()
