"""The judge on Ray: evaluations per minute with one and with two GPU actors, and the spread of
re-evaluated medians across the GPUs.

    pip install -e '.[ray]'
    python benchmarks/ray_throughput.py --out ray_throughput.json

Starts a local Ray cluster on this machine (or joins RAY_ADDRESS) and, on a fresh home:

1. times every task's baselines once through one actor (cached in the store per GPU model, so
   neither mode below measures them);
2. for 1 and then 2 GPU actors (``--actors 1,2``), submits every candidate at once: each bundled
   solution and a second, distinct copy of it (see candidates.py), ``--rounds`` times, and
   reports evaluations per minute from the first submission to the last verdict;
3. with the two-actor judge, re-evaluates each solution ``--repeats`` times on each GPU
   (``cuda:0``, ``cuda:1``), and reports each GPU's median of medians and their spread
   (larger / smaller).

With ``--no-baselines`` step 1 is skipped and no verdict gets speedups: the same candidates are
timed, and the eager and torch.compile baselines of every task (minutes on a fresh machine) are
never compiled.

Prints markdown tables and writes everything to --out as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import ray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from candidates import candidates

from adaexplore_mcp.judge import EvalResult, JudgeError
from adaexplore_mcp.judge.cluster import RayJudge
from adaexplore_mcp.judge.settings import JudgeSettings, RaySettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import Task, get_bundled_task, solution_names

DEVICE = {"kind": "cuda"}  # --device cpu: a smoke test of this script in the interpreter
BASELINES = {"on": True}  # --no-baselines: candidates only, no speedups


class _WithoutSpeedups(RayJudge):
    """A verdict with no speedups: the same evaluation, no baseline ever compiled."""

    async def _baseline(self, *args: object, **kwargs: object):  # type: ignore[override]
        raise JudgeError("speedups are off (--no-baselines)")


def ray_judge(actors: int, store: Store, nodes: Path) -> RayJudge:
    settings = JudgeSettings(device=DEVICE["kind"], timeout_s=600)
    ray = RaySettings(actors=actors, node_home=str(nodes))
    kind = RayJudge if BASELINES["on"] else _WithoutSpeedups
    return kind("ray", settings, ray, store=store)


async def warm_baselines(store: Store, nodes: Path, tasks: list[Task]) -> None:
    async with ray_judge(1, store, nodes) as judge:
        for task in tasks if DEVICE["kind"] == "cuda" else []:
            started = time.monotonic()
            baseline = await judge.baseline(task)
            print(
                f"baseline {task.name}: eager {baseline.eager.median_ms:.4g} ms "
                f"({time.monotonic() - started:.1f} s)",
                flush=True,
            )


async def throughput(actors: int, store: Store, nodes: Path, jobs: list[tuple[Task, str]]) -> dict:
    async with ray_judge(actors, store, nodes) as judge:
        started = time.monotonic()
        results: list[EvalResult] = await asyncio.gather(
            *(judge.evaluate(task, code) for task, code in jobs)
        )
        wall = time.monotonic() - started
        per_device = {lane.device: lane.served for lane in judge.lanes_status()}
    statuses: dict[str, int] = {}
    for result in results:
        statuses[result.status.value] = statuses.get(result.status.value, 0) + 1
    row = {
        "actors": actors,
        "evaluations": len(jobs),
        "wall_s": wall,
        "evals_per_min": 60 * len(jobs) / wall,
        "statuses": statuses,
        "per_device": per_device,
    }
    print(f"{actors} actor(s): {row}", flush=True)
    return row


async def spread(store: Store, nodes: Path, tasks: list[Task], repeats: int) -> list[dict]:
    rows = []
    async with ray_judge(2, store, nodes) as judge:
        for task in tasks:
            code = candidates(task.name)["solution"]
            medians: dict[str, float] = {}
            names: dict[str, str] = {}
            for device in (f"{DEVICE['kind']}:0", f"{DEVICE['kind']}:1"):
                runs = []
                for _ in range(repeats):
                    result = await judge.evaluate(task, code, device=device)
                    if result.ok and result.runtime is not None:
                        runs.append(result.runtime.median_ms)
                if runs:
                    medians[device] = statistics.median(runs)
                names[device] = next(
                    lane.device_name for lane in judge.lanes_status() if lane.device == device
                )
            row = {"task": task.name, "median_ms": medians, "gpus": names}
            if len(medians) == 2:
                row["spread"] = max(medians.values()) / min(medians.values())
            rows.append(row)
            print(f"spread {row}", flush=True)
    return rows


def print_tables(modes: list[dict], spreads: list[dict]) -> None:
    print("\n## Throughput on Ray (evaluations per minute)")
    print("| GPU actors | evaluations | wall s | evals/min | vs 1 actor | per actor |")
    print("|---|---|---|---|---|---|")
    first = modes[0]["evals_per_min"]
    for mode in modes:
        print(
            f"| {mode['actors']} | {mode['evaluations']} | {mode['wall_s']:.1f} | "
            f"{mode['evals_per_min']:.1f} | {mode['evals_per_min'] / first:.2f}x | "
            f"{mode['per_device']} |"
        )
    print("\n## Re-evaluated medians across the two GPUs")
    devices = (f"{DEVICE['kind']}:0", f"{DEVICE['kind']}:1")
    print(f"| task | {devices[0]} ms | {devices[1]} ms | spread |")
    print("|---|---|---|---|")
    for row in spreads:
        ms = row["median_ms"]
        cells = " | ".join(f"{ms[d]:.4g}" if d in ms else "–" for d in devices)
        spread_text = f"{row['spread']:.3f}" if "spread" in row else "–"
        print(f"| {row['task']} | {cells} | {spread_text} |")
    values = [row["spread"] for row in spreads if "spread" in row]
    if values:
        print(f"\nspread: median {statistics.median(values):.3f}, max {max(values):.3f}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", default=",".join(solution_names()))
    parser.add_argument("--actors", default="1,2", help="GPU actors per throughput mode.")
    parser.add_argument("--rounds", type=int, default=2, help="Copies of the candidate set.")
    parser.add_argument("--repeats", type=int, default=3, help="Re-evaluations per GPU.")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--no-baselines",
        action="store_true",
        help="Time candidates only (no speedups): the same work, without compiling baselines.",
    )
    args = parser.parse_args()
    DEVICE["kind"] = args.device
    BASELINES["on"] = not args.no_baselines
    if args.no_baselines:  # each verdict would say it has no baseline
        logging.getLogger("adaexplore_mcp.judge.cluster.judge").setLevel(logging.ERROR)
    # joined once here (RAY_ADDRESS, else a new local cluster), so every judge below shares it
    ray.init(include_dashboard=False, log_to_driver=False)
    tasks = [get_bundled_task(name) for name in args.tasks.split(",")]
    jobs = [
        (task, f"# round {round_}\n" + code)
        for round_ in range(args.rounds)
        for task in tasks
        for label, code in candidates(task.name).items()
        if label in ("solution", "variant")
    ]
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        store = Store(home / "db.sqlite3")
        if BASELINES["on"]:
            await warm_baselines(store, home / "nodes", tasks)
        modes = [
            await throughput(int(n), store, home / "nodes", jobs) for n in args.actors.split(",")
        ]
        spreads = await spread(store, home / "nodes", tasks, args.repeats)
    print_tables(modes, spreads)
    if args.out:
        args.out.write_text(json.dumps({"modes": modes, "spreads": spreads}, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
