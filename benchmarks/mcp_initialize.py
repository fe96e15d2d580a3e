"""How long a client waits for `initialize` when it starts `adaexplore-mcp serve` (target: < 1 s).

    python benchmarks/mcp_initialize.py --runs 5

Starts the real server over stdio with the SDK's client (the initialize handshake, as Claude
Code and the Inspector connect) in one ADAEXPLORE_HOME, --runs times: the first run installs the
starter memory, the later ones find it there. Prints the time from spawning the process to the
answer of `initialize`, and of the `tools/list` after it, for each run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def once(home: str) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADAEXPLORE_")}
    env["ADAEXPLORE_HOME"] = home
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "adaexplore_mcp.cli", "serve"], env=env
    )
    started = time.perf_counter()
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        initialized = time.perf_counter()
        await session.list_tools()
        listed = time.perf_counter()
    return initialized - started, listed - initialized


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="adaexplore-init-")
    print(f"{'run':>3} {'initialize s':>13} {'tools/list s':>13}")
    for run in range(1, args.runs + 1):
        initialize, listing = asyncio.run(once(home))
        print(f"{run:3} {initialize:13.3f} {listing:13.3f}", flush=True)


if __name__ == "__main__":
    main()
