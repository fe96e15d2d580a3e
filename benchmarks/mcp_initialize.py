"""How long a client waits for `initialize` when it starts `adaexplore-mcp serve` (target: < 1 s).

    python benchmarks/mcp_initialize.py --runs 5 --imports 15

Starts the real server over stdio with the SDK's client (the initialize handshake, as Claude
Code and the Inspector connect) in one ADAEXPLORE_HOME, --runs times: the first run creates the
database, the later ones find it there (the starter memory is installed when the first tool call
that needs the memory builds it, and no run makes one). Prints the time from spawning the
process to the answer of `initialize`, and of the `tools/list` after it, for each run, and their
medians.

Then, once more under `python -X importtime`, the imports that cost the most before the server
answered: the --imports slowest packages and modules (their own code, without what they import),
so one run on a slow host shows where its time goes.

The figure assumes what a normal install gives: compiled bytecode next to the sources. Where
``PYTHONDONTWRITEBYTECODE`` is set (some CUDA images set it) and the packages were installed
without compiling (``pip install --no-compile``), every start compiles the SDK and this package
from source again: on an H200 host that made the median 1.43 s against 0.89-0.95 s compiled. The
benchmark says so when it sees that setting; ``python -m compileall`` on the install fixes it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from typing import TextIO

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def once(
    home: str, python_flags: tuple[str, ...] = (), errlog: TextIO = sys.stderr
) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADAEXPLORE_")}
    env["ADAEXPLORE_HOME"] = home
    server = StdioServerParameters(
        command=sys.executable,
        args=[*python_flags, "-m", "adaexplore_mcp.cli", "serve"],
        env=env,
    )
    started = time.perf_counter()
    async with (
        stdio_client(server, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        initialized = time.perf_counter()
        await session.list_tools()
        listed = time.perf_counter()
    return initialized - started, listed - initialized


def parse_importtime(lines: list[str]) -> list[tuple[int, int, int, str]]:
    """(own µs, cumulative µs, depth, module) for each line `python -X importtime` wrote."""
    rows = []
    for line in lines:
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|")
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        rows.append((int(own), int(cumulative), depth, name.strip()))
    return rows


def show_imports(home: str, count: int) -> None:
    with tempfile.TemporaryFile("w+") as log:
        initialize, _ = asyncio.run(once(home, ("-X", "importtime"), errlog=log))
        log.seek(0)
        rows = parse_importtime(log.read().splitlines())
    total = sum(own for own, *_ in rows) / 1e6
    print(f"\nunder -X importtime: initialize {initialize:.3f} s, imports {total:.3f} s in all")
    # own time summed by package (this project's by subpackage): the SDK imports inside ours,
    # so a cumulative figure would charge it to whoever imported it first
    by_package: dict[str, int] = {}
    for own, _, _, name in rows:
        parts = name.split(".")
        package = ".".join(parts[:2]) if parts[0] == "adaexplore_mcp" else parts[0]
        by_package[package] = by_package.get(package, 0) + own
    print(f"{'package (its modules own code)':<40} {'s':>12}")
    for package, own in sorted(by_package.items(), key=lambda item: item[1], reverse=True)[:count]:
        print(f"{package:<40} {own / 1e6:12.3f}")
    print(f"{'module (own code)':<40} {'own s':>12}")
    for own, _, _, name in sorted(rows, reverse=True)[:count]:
        print(f"{name:<40} {own / 1e6:12.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--imports", type=int, default=15, help="how many imports to list")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="adaexplore-init-")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print(
            "note: PYTHONDONTWRITEBYTECODE is set: modules without compiled bytecode are compiled "
            "from source at every start (run `python -m compileall` on the install to measure "
            "what a normal install gives)"
        )
    print(f"{'run':>3} {'initialize s':>13} {'tools/list s':>13}")
    times = []
    for run in range(1, args.runs + 1):
        initialize, listing = asyncio.run(once(home))
        times.append((initialize, listing))
        print(f"{run:3} {initialize:13.3f} {listing:13.3f}", flush=True)
    later = times[1:] or times  # the first run also creates the database
    print(
        f"median {statistics.median(t[0] for t in later):10.3f} "
        f"{statistics.median(t[1] for t in later):13.3f}  (runs 2 on)"
    )
    if args.imports:
        show_imports(home, args.imports)


if __name__ == "__main__":
    main()
