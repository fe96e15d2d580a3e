"""What the integrity checks cost, and judge throughput with 1 and 2 concurrent submitters.

    python benchmarks/integrity_cost.py --device cuda:0 --out integrity.json

Each submitter evaluates the bundled solutions of --tasks one after another, --rounds times;
the submitters run concurrently against one judge on one GPU. Every combination of the
integrity checks (on, off) and the submitter count (--submitters) gets a fresh judge, with the
baselines timed and cached beforehand so only candidate evaluation is measured. Reports
evaluations per minute and the mean seconds per evaluation by phase.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from adaexplore_mcp.judge import EvalResult, LocalJudge
from adaexplore_mcp.judge.settings import IntegritySettings, JudgeSettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task

DEFAULT_TASKS = "softmax,layernorm,gemm_bias_relu,cross_entropy_rows,decode_attention,matmul_fp16"


async def run_config(
    device: str, home: Path, tasks: list[str], rounds: int, submitters: int, integrity: bool
) -> dict:
    settings = JudgeSettings(
        device=device, timeout_s=600, integrity=IntegritySettings(enabled=integrity)
    )
    store = Store(home / "db.sqlite3")
    async with LocalJudge(settings, home=home, store=store) as judge:
        for name in tasks:  # cached baselines: measure candidates only
            await judge.baseline(get_bundled_task(name))
        results: list[EvalResult] = []

        async def submitter() -> None:
            for _ in range(rounds):
                for name in tasks:
                    code = bundled_solution(name)
                    assert code is not None
                    results.append(await judge.evaluate(get_bundled_task(name), code))

        started = time.perf_counter()
        await asyncio.gather(*(submitter() for _ in range(submitters)))
        wall = time.perf_counter() - started
    bad = [f"{r.task}: {r.message}" for r in results if not r.ok]

    def mean(field: str) -> float:
        return statistics.fmean(getattr(r.phases, field) for r in results)

    return {
        "integrity": integrity,
        "submitters": submitters,
        "evaluations": len(results),
        "not_correct": bad,
        "wall_s": wall,
        "evals_per_min": len(results) / wall * 60,
        "mean_s": {
            field: mean(field)
            for field in ("queue_s", "startup_s", "compile_s", "check_s", "timing_s", "total_s")
        },
        "speedups": {r.task: r.speedup_eager for r in results},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--submitters", default="1,2")
    parser.add_argument("--home", type=Path, default=Path("/tmp/adaexplore-integrity-bench"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    tasks = args.tasks.split(",")
    args.home.mkdir(parents=True, exist_ok=True)

    rows = []
    for submitters in (int(n) for n in args.submitters.split(",")):
        for integrity in (True, False):
            row = asyncio.run(
                run_config(args.device, args.home, tasks, args.rounds, submitters, integrity)
            )
            rows.append(row)
            print(
                f"integrity={'on ' if integrity else 'off'} submitters={submitters}: "
                f"{row['evals_per_min']:.1f} evals/min, mean total {row['mean_s']['total_s']:.2f}"
                f" s (check {row['mean_s']['check_s']:.2f} s, timing "
                f"{row['mean_s']['timing_s']:.2f} s), not correct: {len(row['not_correct'])}",
                flush=True,
            )
            for line in row["not_correct"]:
                print("   ", line)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
