"""What a kernel gains by where it puts its work, its gates and its done words, per number of
hardware queues its context gets (``sandbox.cuda_connections``): the bundled softmax judged
honestly and as the exploits of ``tests/judge/exploits.py`` that move its work off the gate's
stream, its gates onto a stream of its own (``gates_own_N``: its work N streams after them) or
its done word ahead of the work, alternated.

    python benchmarks/stream_gains.py --connections 2,none --repeats 3 --out gains.json
    python benchmarks/stream_gains.py --connections 2 --variants gates_own_1,done_word_ahead

For each setting it starts one judge (four workers, no baselines) and evaluates, ``--repeats``
times in turn, the honest kernel and every variant. It prints each variant's median and its
ratio to the honest median (below 1 is a gain the judge let through;
``test_work_left_on_a_side_stream_gains_little`` allows 0.95; ``joined_side_stream`` is honest
and should read 1), and why a variant was not timed. Run from the repository's root, which
holds ``tests``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import trusted_judge
from trusted_judge import judge_for, solution

from adaexplore_mcp.tasks import get_bundled_task

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the exploits are the tests'
from tests.judge.exploits import (
    DONE_WORD_AHEAD_OF_THE_WORK,
    JOINED_SIDE_STREAM,
    SIDE_STREAM,
    SIDE_STREAM_BESIDE_ITS_GATES,
    gates_on_its_own_stream,
    on_a_side_stream,
)

VARIANTS = {
    "side_stream": SIDE_STREAM,
    "side_stream_beside_its_gates": SIDE_STREAM_BESIDE_ITS_GATES,
    "done_word_ahead": DONE_WORD_AHEAD_OF_THE_WORK,
    "fourth_stream": on_a_side_stream(
        "self.sides = [torch.cuda.Stream() for _ in range(4)]\nself.side = self.sides[-1]"
    ),
    "high_priority_stream": on_a_side_stream("self.side = torch.cuda.Stream(priority=-1)"),
    # honest: its work on a stream of its own, joined back before forward returns
    "joined_side_stream": JOINED_SIDE_STREAM,
    # the gates on the kernel's first stream, its work on the n-th after it (0: the same one)
    **{f"gates_own_{n}": gates_on_its_own_stream(n) for n in (0, 1, 2, 3, 4, 8)},
}


async def one_setting(
    device: str, connections: str, repeats: int, variants: list[str]
) -> dict[str, list[Any]]:
    task = get_bundled_task("softmax")
    codes = {"honest": solution("softmax"), **{name: VARIANTS[name] for name in variants}}
    readings: dict[str, list[Any]] = {name: [] for name in codes}
    messages: dict[str, str] = {}
    home = Path(tempfile.mkdtemp(prefix="stream-gains-"))
    # first signals off: the variants that serve the judge dishonestly find its classes through
    # gc, which the audit hook refuses (``exploits.JUDGES_OWN``)
    queues = {"cuda_connections": connections}
    async with judge_for(device, 4, home, sandbox=queues, first_signals=False) as judge:
        for _ in range(repeats):
            for name, code in codes.items():
                result = await judge.evaluate(task, code)
                median = result.runtime.median_ms if result.runtime else None
                readings[name].append(median if median is not None else result.status.value)
                print(connections, name, readings[name][-1], flush=True)
                if median is None:  # why it was not timed is the finding
                    messages[name] = result.message[:400]
    for name, message in messages.items():
        print(f"{connections} {name} not timed: {message}", flush=True)
    return readings


def summarize(connections: str, readings: dict[str, list[Any]]) -> None:
    def median(values: list[Any]) -> float | None:
        timed = [v for v in values if isinstance(v, float)]
        return statistics.median(timed) if timed else None

    honest = median(readings["honest"])
    print(f"== cuda_connections={connections}: honest {honest or float('nan'):.4f} ms")
    for name, values in readings.items():
        if name == "honest":
            continue
        ours = median(values)
        if ours is None or honest is None:
            print(f"{name:30} not timed: {', '.join(sorted({str(v) for v in values}))}")
            continue
        print(f"{name:30} {ours:.4f} ms  {ours / honest:6.3f} of honest")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--connections", default="2,none", help="comma-separated; none: 8")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma-separated, of: {', '.join(VARIANTS)}"
    )
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    trusted_judge.TIMEOUT_S = args.timeout
    trusted_judge.BASELINES = False  # candidates only: no speedups, no baselines to compile
    variants = list(filter(None, args.variants.split(",")))
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    results: dict[str, dict[str, list[Any]]] = {}
    for connections in filter(None, args.connections.split(",")):
        results[connections] = asyncio.run(
            one_setting(args.device, connections, args.repeats, variants)
        )
        if args.out:  # what is in survives a time limit
            args.out.write_text(json.dumps(results, indent=1))
    for connections, readings in results.items():
        summarize(connections, readings)


if __name__ == "__main__":
    main()
