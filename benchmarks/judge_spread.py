"""How far repeated quiet evaluations of one kernel spread, under several judge settings
alternated in one run: what a setting does to the spread, apart from the host's drift.

    python benchmarks/judge_spread.py --tasks softmax,sum_rows,cumsum --repeats 5 --rounds 2 \\
        --variant two-queues=sandbox.cuda_connections=2 \\
        --variant default=sandbox.cuda_connections=none \\
        --variant panel-16=timing.null_panel=16 --out spread.json

Each round starts one judge (four workers, no baselines) per variant, in an order rotated
round by round, and evaluates every task ``--repeats`` times, one at a time, so that the
evaluations rotate over the workers as a user's do. It prints, per variant, each task's spread
(max/min - 1 of the medians, over all rounds) and how many are within 1%, and each worker's
mean deviation from its tasks' medians (``trusted_judge.worker_bias``): a worker's
calibration is made once, when it starts, so a spread that is mostly the worker's shows here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

import trusted_judge
from trusted_judge import judge_for, row, solution, spread, worker_bias, worker_of

from adaexplore_mcp.tasks import get_bundled_task

SECTIONS = ("timing", "sandbox")


def parse_variant(text: str) -> tuple[str, dict[str, dict[str, str]]]:
    """``NAME=SECTION.FIELD=VALUE[,SECTION.FIELD=VALUE...]`` (``none`` for None); a bare
    ``NAME`` is the judge's defaults."""
    name, _, rest = text.partition("=")
    overrides: dict[str, dict[str, str]] = {section: {} for section in SECTIONS}
    for item in filter(None, rest.split(",")):
        path, equals, value = item.partition("=")
        section, dot, field = path.partition(".")
        if not (equals and dot and section in SECTIONS):
            raise SystemExit(
                f"--variant {text!r}: expected SECTION.FIELD=VALUE, SECTION one of "
                f"{', '.join(SECTIONS)}"
            )
        overrides[section][field] = value
    return name, overrides


async def one_round(
    device: str, names: list[str], repeats: int, overrides: dict[str, dict[str, str]]
) -> dict[str, list[dict[str, Any]]]:
    home = Path(tempfile.mkdtemp(prefix="judge-spread-"))
    out: dict[str, list[dict[str, Any]]] = {}
    async with judge_for(device, 4, home, **overrides) as judge:
        for name in names:
            task, code = get_bundled_task(name), solution(name)
            out[name] = [row(name, await judge.evaluate(task, code)) for _ in range(repeats)]
            print(name, [r["status"] for r in out[name]], flush=True)
    return out


def summarize(variant: str, rounds: list[dict[str, list[dict[str, Any]]]]) -> None:
    print(f"== {variant}")
    if not rounds:  # the run ended before this variant's first round did
        print("no round finished")
        return
    within = 0
    names = list(rounds[0])
    for name in names:
        medians = [r["median_ms"] for runs in rounds for r in runs[name] if r["median_ms"]]
        if not medians:  # on the CPU, or every evaluation failed
            statuses = sorted({r["status"] for runs in rounds for r in runs[name]})
            print(f"{name:26} not timed: {', '.join(statuses)}")
            continue
        by_round = [
            spread([r["median_ms"] for r in runs[name] if r["median_ms"]]) for runs in rounds
        ]
        within += spread(medians) <= 1.0
        print(
            f"{name:26} median {statistics.median(medians):.4f} ms  spread {spread(medians):5.2f}%"
            f"  by round {', '.join(f'{s:.2f}%' for s in by_round)}"
        )
    print(f"within 1%: {within} of {len(names)}")
    split = calibration_split(rounds)
    if split:
        print(
            "sd a call, µs, centred per task: medians {medians:.2f}, medians before calibration "
            "{uncalibrated:.2f}, handoffs {handoffs:.2f}; r(before, handoff) {r:+.2f}".format(
                **split
            )
        )
    alternatives = handoff_alternatives(rounds)
    if alternatives:
        print(
            "sd of the medians had the handoff been, instead of each span's, the mean of the "
            "round's other evaluations {constant:.2f}, of the worker's others {worker:.2f}".format(
                **alternatives
            )
        )
    for index, runs in enumerate(rounds):
        workers = worker_bias({name: {"quiet": rows, "loaded": []} for name, rows in runs.items()})
        if not workers:
            print(f"round {index + 1}: no null panel, so no worker told apart")
            continue
        means = [mean for mean, _ in workers]
        sd = statistics.stdev(means) if len(means) > 1 else float("nan")
        listed = ", ".join(f"{mean:+.2f} ({count})" for mean, count in workers)
        print(f"round {index + 1}: workers' mean deviation, µs a call: {listed}; sd {sd:.2f}")


def calibration_split(rounds: list[dict[str, list[dict[str, Any]]]]) -> dict[str, float] | None:
    """Where the spread comes from: the medians' standard deviation, that of the medians with
    the handoff added back (what the candidates' calls read before calibration) and the
    handoffs' (a call's share), each centred on its task's mean over all rounds, and the
    correlation of the last two. A calibration that tracked what the candidates' contexts read
    would correlate with it and leave the medians' deviation below the uncalibrated one; one
    that is noise adds to it."""
    columns: dict[str, list[float]] = {"medians": [], "uncalibrated": [], "handoffs": []}
    for name in rounds[0]:
        runs = [r for one in rounds for r in one[name] if r["median_ms"] and r["timing"]]
        if len(runs) < 2:
            continue
        handoffs = [handoff_share(r) for r in runs]
        values = {
            "medians": [r["median_ms"] for r in runs],
            "uncalibrated": [r["median_ms"] + h for r, h in zip(runs, handoffs, strict=True)],
            "handoffs": handoffs,
        }
        for column, ms in values.items():
            middle = statistics.fmean(ms)
            columns[column] += [(value - middle) * 1e3 for value in ms]
    if len(columns["medians"]) < 3:
        return None
    split = {column: statistics.pstdev(values) for column, values in columns.items()}
    try:
        r = statistics.correlation(columns["uncalibrated"], columns["handoffs"])
    except statistics.StatisticsError:  # a constant column
        r = float("nan")
    return split | {"r": r}


def handoff_alternatives(
    rounds: list[dict[str, list[dict[str, Any]]]],
) -> dict[str, float] | None:
    """The medians' standard deviation (µs a call, centred per task) had each evaluation's
    handoff been replaced by the mean of the others' in its round (``constant``), or of its
    worker's others in its round (``worker``; a worker told by its panel's reading): what a
    calibration made once, for the GPU or for a worker, instead of next to every span would
    have left, estimated from the same evaluations."""
    per_task: dict[str, dict[str, list[float]]] = {"constant": {}, "worker": {}}
    for runs in rounds:
        timed = [
            (name, r) for name, rows in runs.items() for r in rows if r["median_ms"] and r["timing"]
        ]
        for name, r in timed:
            before = r["median_ms"] + handoff_share(r)
            others = [other for _, other in timed if other is not r]
            workers = [other for other in others if worker_of(other) == worker_of(r)]
            for column, pool in (("constant", others), ("worker", workers)):
                if pool:
                    mean = statistics.fmean(handoff_share(other) for other in pool)
                    per_task[column].setdefault(name, []).append(before - mean)
    sds = {}
    for column, tasks in per_task.items():
        centred = [
            (value - statistics.fmean(values)) * 1e3
            for values in tasks.values()
            if len(values) > 1
            for value in values
        ]
        if len(centred) < 3:
            return None
        sds[column] = statistics.pstdev(centred)
    return sds


def handoff_share(r: dict[str, Any]) -> float:
    """A call's share of an evaluation's handoff: one a gate, taken off all its calls."""
    return r["timing"]["handoff_ms"] / r["timing"].get("calls_per_gate", 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument(
        "--tasks", default="softmax,sum_rows,cumsum,layernorm,rmsnorm,add_layernorm"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=OVERRIDES")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--from", dest="earlier", type=Path, default=None, help="Summarize an earlier --out file."
    )
    args = parser.parse_args()
    if args.earlier:
        for variant, rounds in json.loads(args.earlier.read_text()).items():
            summarize(variant, rounds)
        return
    variants = dict(parse_variant(text) for text in args.variant or ["defaults"])
    names = [n for n in args.tasks.split(",") if n]
    trusted_judge.TIMEOUT_S = args.timeout
    trusted_judge.BASELINES = False  # candidates only: no speedups, no baselines to compile
    results: dict[str, list[dict[str, list[dict[str, Any]]]]] = {name: [] for name in variants}
    order = list(variants)
    for index in range(args.rounds):
        for variant in order[index % len(order) :] + order[: index % len(order)]:
            print(f"-- round {index + 1}, {variant}", flush=True)
            results[variant].append(
                asyncio.run(one_round(args.device, names, args.repeats, variants[variant]))
            )
            if args.out:  # what is in survives a time limit
                args.out.write_text(json.dumps(results, indent=1, default=str))
    for variant, rounds in results.items():
        summarize(variant, rounds)


if __name__ == "__main__":
    main()
