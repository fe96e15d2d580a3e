"""What an agent reads: the size of every MCP answer over a scripted search.

    python benchmarks/mcp_answers.py --steps 20 [--json sizes.json]

Launches the real `adaexplore-mcp serve` over stdio in a temporary ADAEXPLORE_HOME (the CPU
interpreter judge unless ADAEXPLORE_JUDGE__DEVICE says otherwise), starts --searches searches
(so that list_searches has something to list), and drives one of them for --steps steps as an
agent would: select_node, then the step it asks for, built from the node's kernel by a fixed,
seeded policy (a third of the steps break the kernel: a compile error or a wrong result, so the
answers carry failures and rules); get_tree and get_rules now and then, best_kernel at the end.

Each answer is measured as the model reads it: the characters of its text content (the JSON of
the structured result). Tokens are estimated at 4 characters a token. Prints, per tool, the
number of calls, the mean and the largest answer, and the tokens one step costs (select_node
plus the step's answer). The policy sends only what the server must accept from any version, so
the same run measures the server before and after a change.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
from collections import defaultdict
from typing import Any

from mcp import Client, StdioServerParameters

TASK = "softmax"
CHARS_PER_TOKEN = 4
STEP_TOOLS = ("apply_patch", "regenerate")


def _solution() -> str:
    from adaexplore_mcp.tasks import bundled_solution

    code = bundled_solution(TASK)
    if not code:
        raise SystemExit(f"no bundled solution for {TASK}")
    return code


def small_patch(code: str, step: int, rng: random.Random) -> list[dict[str, str]]:
    """An edit of ``code``: mostly harmless tuning, sometimes a compile error or a wrong result."""
    roll = rng.random()
    if roll < 0.15 and "tl.arange(0, BLOCK_SIZE)" in code:
        return [{"old_str": "tl.arange(0, BLOCK_SIZE)", "new_str": "tl.arange(0, 1000)"}]
    normalized = "y = numerator / tl.sum(numerator, axis=0)"
    if roll < 0.3 and normalized in code:
        return [{"old_str": normalized, "new_str": "y = numerator"}]
    anchor = "    row = tl.program_id(axis=0).to(tl.int64)\n"
    if anchor not in code:
        anchor = code.splitlines(keepends=True)[0]
    return [{"old_str": anchor, "new_str": anchor + f"    # tuning step {step}\n"}]


def large_kernel(base: str, step: int, rng: random.Random) -> str:
    """A whole kernel: the solution with another block bound, one in four broken."""
    code = base.replace("LOOP_BLOCK = 4096", f"LOOP_BLOCK = {rng.choice([1024, 2048, 4096])}")
    code = f"# variant {step}\n" + code
    if rng.random() < 0.25:
        code = code.replace("tl.arange(0, BLOCK_SIZE)", "tl.arange(0, 1000)")
    return code


class Recorder:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.sizes: dict[str, list[int]] = defaultdict(list)

    async def call(self, tool: str, **arguments: Any) -> tuple[dict | None, bool]:
        result = await self.client.call_tool(tool, arguments)
        text = "".join(getattr(block, "text", "") for block in result.content)
        self.sizes[tool].append(len(text))
        return result.structured_content, bool(result.is_error)


async def drive(args: argparse.Namespace) -> dict[str, list[int]]:
    home = tempfile.mkdtemp(prefix="adaexplore-answers-")
    env = {**os.environ, "ADAEXPLORE_HOME": home}
    env.setdefault("TRITON_INTERPRET", "1")
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "adaexplore_mcp.cli", "serve"], env=env
    )
    rng = random.Random(args.seed)
    base = _solution()
    async with Client(server) as client:
        # the SDK client's own schema check costs time, not size: skip it
        client.session.validate_tool_result = _no_check  # type: ignore[method-assign]
        rec = Recorder(client)
        for i in range(args.searches - 1):
            await rec.call("start_search", task=TASK, max_steps=20, label=f"other {i}")
        info, failed = await rec.call(
            "start_search", task=TASK, max_steps=args.steps, seed=args.seed, label="measured"
        )
        if failed or info is None:
            raise SystemExit(f"start_search failed: {info}")
        search_id = info["id"]
        await rec.call("list_searches")
        await rec.call("get_rules", query=base, task=TASK)
        step_tokens: list[int] = []
        for step in range(args.steps):
            selection, failed = await rec.call("select_node", search_id=search_id)
            if failed or selection is None:
                break
            selected = rec.sizes["select_node"][-1]
            node = selection["node"]
            if selection["action"] == "small" and node.get("code"):
                _, failed = await rec.call(
                    "apply_patch",
                    search_id=search_id,
                    node_id=node["id"],
                    patches=small_patch(node["code"], step, rng),
                )
                answered = rec.sizes["apply_patch"][-1]
            else:
                _, failed = await rec.call(
                    "regenerate",
                    search_id=search_id,
                    node_id=node["id"],
                    code=large_kernel(base, step, rng),
                )
                answered = rec.sizes["regenerate"][-1]
            step_tokens.append((selected + answered) // CHARS_PER_TOKEN)
            action = selection["action"]
            print(f"step {step + 1}: {action:5} {step_tokens[-1]:6} tokens", flush=True)
            if step % 5 == 4:
                await rec.call("get_tree", search_id=search_id)
        await rec.call("best_kernel", search_id=search_id)
        await rec.call("list_searches")
        sizes = dict(rec.sizes)
        sizes["step (select_node + its step)"] = [t * CHARS_PER_TOKEN for t in step_tokens]
        return sizes


async def _no_check(*_: Any, **__: Any) -> None:
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--searches", type=int, default=20, help="searches in the store")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", help="also write the raw sizes (characters) here")
    args = parser.parse_args()
    sizes = asyncio.run(drive(args))
    print(f"\n{'tool':32} {'calls':>5} {'mean tokens':>12} {'max tokens':>11}")
    for tool, values in sorted(sizes.items()):
        mean = statistics.fmean(values) / CHARS_PER_TOKEN
        print(f"{tool:32} {len(values):5} {mean:12.0f} {max(values) // CHARS_PER_TOKEN:11}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(sizes, out, indent=1)


if __name__ == "__main__":
    main()
