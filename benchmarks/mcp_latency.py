"""Latency of the MCP tools that do not evaluate, over stdio (target: median under 10 ms).

    python benchmarks/mcp_latency.py --calls 200 --nodes 60

Seeds a search of --nodes nodes in a temporary ADAEXPLORE_HOME through the search engine (the
bundled softmax solution with variations, answered by a canned judge, so nothing is
evaluated), then launches the real `adaexplore-mcp serve` as a subprocess, connects the SDK's
stdio client and times each tool end to end as a client sees it: JSON-RPC over the pipes,
argument validation, the tool, the structured result. Each select_node's lease is released
(untimed) so the tree stays the same.

Two passes: the SDK's Python client as it is, and the same client with its own check of the
structured result against the tool's output schema turned off. That check runs in the client
(the `jsonschema` package) after the answer has arrived, and grows with the result: for
get_tree it is most of the round trip. The second pass is the server's share.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from adaexplore_mcp.config import database_path
from adaexplore_mcp.judge import EvalResult, Status
from adaexplore_mcp.judge.result import Environment, kernel_hash
from adaexplore_mcp.search_engine import Budget, SearchEngine
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import Task, bundled_solution, get_bundled_task

TASK = "softmax"


class CannedJudge:
    """Answers every kernel with a verdict drawn at random: seeds a tree without evaluating."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)
        self.devices = ["cpu"]

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def evaluate(self, task: Task, code: str, **_: Any) -> EvalResult:
        status = self._rng.choice([Status.CORRECT, Status.CORRECT, Status.COMPILE_ERROR])
        return EvalResult(
            status=status,
            message=f"{status.value}: a canned verdict for the benchmark",
            task=task.name,
            task_hash=task.hash,
            kernel_hash=kernel_hash(code),
            environment=Environment(
                device="cpu",
                device_name="cpu (canned)",
                interpreter=True,
                torch="-",
                triton="-",
                python=platform.python_version(),
            ),
        )


async def seed_search(home: Path, nodes: int) -> str:
    store = Store(database_path(home))
    engine = SearchEngine(store, CannedJudge(), SearchSettings(seed=1))  # type: ignore[arg-type]
    task = get_bundled_task(TASK)
    base = bundled_solution(TASK) or ""
    search = engine.start_search(task, budget=Budget(max_steps=1_000_000))
    rng = random.Random(1)
    for index in range(nodes - 1):
        parents = [n.id for n in engine.get_tree(search.id).nodes if n.id > 0]
        if not parents or rng.random() < 0.3:
            code = base + f"\n# variant {index}\n"
            await engine.regenerate(search.id, code)
        else:
            parent = rng.choice(parents)
            current = engine.get_node(search.id, parent).code or ""
            last = current.rstrip("\n").splitlines()[-1]
            edit = {"old_str": last, "new_str": last + f"  # step {index}"}
            await engine.apply_patch(search.id, parent, [edit])
    return search.id


async def _no_check(name: str, result: Any) -> None:
    return None


async def measure(
    home: Path, search_id: str, calls: int, warmup: int, *, client_check: bool
) -> dict[str, list[float]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADAEXPLORE_")}
    env |= {"ADAEXPLORE_HOME": str(home), "ADAEXPLORE_JUDGE__DEVICE": "cpu"}
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "adaexplore_mcp.cli", "serve"], env=env
    )
    node = 1
    kernel = bundled_solution(TASK) or ""
    cases: dict[str, dict[str, Any]] = {
        "list_tasks": {},
        "get_task": {"task": TASK},
        "get_rules": {"query": "tl.arange mask power of two"},
        "get_rules (kernel query)": {"query": kernel, "task": TASK},
        "get_tree": {"search_id": search_id},
        "get_node": {"search_id": search_id, "node_id": node},
        "select_node": {"search_id": search_id},
    }
    timings: dict[str, list[float]] = {}
    async with Client(server) as client:
        if not client_check:
            # an instance attribute shadows the method: this client skips its own schema check
            client.session.validate_tool_result = _no_check  # type: ignore[method-assign]
        for label, arguments in cases.items():
            tool = label.split(" ")[0]
            samples: list[float] = []
            for i in range(warmup + calls):
                started = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                elapsed = (time.perf_counter() - started) * 1000
                if result.is_error:
                    raise SystemExit(f"{tool} failed: {result.content[0].text}")
                if i >= warmup:
                    samples.append(elapsed)
                if tool == "select_node":  # give the lease back, untimed
                    held = result.structured_content["node"]["id"]
                    await client.call_tool("release", {"search_id": search_id, "node_id": held})
            timings[label] = samples
    return timings


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="Timed calls per tool.")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=60, help="Nodes in the seeded search.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        search_id = asyncio.run(seed_search(home, args.nodes))
        passes = [
            asyncio.run(measure(home, search_id, args.calls, args.warmup, client_check=check))
            for check in (True, False)
        ]
    print(
        f"MCP tools over stdio: {args.calls} calls each after {args.warmup} warm-up calls; "
        f"a {args.nodes}-node search; {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}"
    )
    print(f"{'':<26} {'SDK client as is':>19}   {'without its schema check':>24}")
    print(f"{'tool (ms)':<26} {'median':>9} {'p95':>9}   {'median':>12} {'p95':>11}")
    for label in passes[0]:
        (m1, p1), (m2, p2) = (percentiles(timings[label]) for timings in passes)
        print(f"{label:<26} {m1:>9.2f} {p1:>9.2f}   {m2:>12.2f} {p2:>11.2f}")


if __name__ == "__main__":
    main()
