"""Judge throughput: the warm pool against a fresh Python process per evaluation.

    python benchmarks/judge_throughput.py --device cuda:0 --out throughput.json

For every task (default: eight bundled tasks with solutions, levels 1-3) and each of five
candidates (see candidates.py), every evaluation is submitted at once to a judge in each mode:

- ``fresh``: one new Python process per evaluation, one at a time (what KernelBench-style
  harnesses do: start Python, import torch and triton, evaluate, exit);
- ``pool-1``: one warm worker, one evaluation at a time: the gain of warm workers alone;
- ``pool-N``: N warm workers on the same GPU: compiles and checks overlap, timing is exclusive.

Baselines are timed first and cached, so every mode measures candidate evaluation only. Then one
kernel per task listed in --spread-tasks is re-evaluated --repeats times to measure the spread
(max/min) of its reported median. Prints tables and writes everything to --out as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from candidates import candidates

from adaexplore_mcp.judge import EvalResult, LocalJudge
from adaexplore_mcp.judge.settings import JudgeSettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import Task, get_bundled_task

DEFAULT_TASKS = (
    "softmax,layernorm,rmsnorm,"
    "gemm_bias_relu,add_layernorm,causal_attention_scores,cross_entropy_rows,"
    "decode_attention"
)


def judge_settings(device: str, workers: int, reuse: bool) -> JudgeSettings:
    return JudgeSettings(
        device=device, workers_per_device=workers, reuse_workers=reuse, timeout_s=600
    )


async def warm_baselines(device: str, home: Path, store: Store, tasks: list[Task]) -> dict:
    times = {}
    async with LocalJudge(judge_settings(device, 1, True), home=home, store=store) as judge:
        if judge.devices[0] == "cpu":
            return times
        for task in tasks:
            started = time.monotonic()
            baseline = await judge.baseline(task)
            times[task.name] = {
                "seconds": time.monotonic() - started,
                "eager_ms": baseline.eager.median_ms,
                "compile_ms": baseline.compiled.median_ms if baseline.compiled else None,
                "compile_error": baseline.compile_error,
            }
            print(f"baseline {task.name}: {times[task.name]}", flush=True)
    return times


async def run_mode(
    name: str, settings: JudgeSettings, home: Path, store: Store, jobs: list[tuple[Task, str, str]]
) -> dict:
    judge = LocalJudge(settings, home=home, store=store)
    started = time.monotonic()
    await judge.start()
    startup_s = time.monotonic() - started

    async def one(task: Task, label: str, code: str) -> dict:
        begun = time.monotonic()
        result: EvalResult = await judge.evaluate(task, code)
        latency = time.monotonic() - begun
        phases = result.phases
        overhead = phases.total_s - phases.compile_s - phases.kernel_s
        return {
            "task": task.name,
            "level": task.level,
            "candidate": label,
            "status": result.status.value,
            "latency_s": latency,
            "service_s": latency - phases.queue_s,
            "overhead_s": overhead,
            "median_ms": result.runtime.median_ms if result.runtime else None,
            "speedup_eager": result.speedup_eager,
            "speedup_compile": result.speedup_compile,
            "phases": phases.model_dump(),
        }

    rows: list[dict] = []
    per_level: dict[int, dict] = {}
    try:
        # one level at a time, all of its evaluations submitted at once
        for level in sorted({task.level for task, _, _ in jobs}):
            batch = [job for job in jobs if job[0].level == level]
            begun = time.monotonic()
            rows += await asyncio.gather(*(one(t, label, code) for t, label, code in batch))
            wall = time.monotonic() - begun
            per_level[level] = {
                "n": len(batch),
                "wall_s": wall,
                "evals_per_min": 60 * len(batch) / wall,
            }
    finally:
        await judge.close()
    wall = sum(level["wall_s"] for level in per_level.values())
    summary = {
        "mode": name,
        "startup_s": startup_s,
        "wall_s": wall,
        "evals_per_min": 60 * len(rows) / wall,
        "levels": per_level,
        "rows": rows,
    }
    print(f"{name}: {len(rows)} evaluations in {wall:.1f}s ({summary['evals_per_min']:.1f}/min)")
    return summary


async def spread(device: str, home: Path, store: Store, names: list[str], repeats: int) -> list:
    rows = []
    async with LocalJudge(judge_settings(device, 1, True), home=home, store=store) as judge:
        for name in names:
            task = get_bundled_task(name)
            medians = []
            for _ in range(repeats):
                result = await judge.evaluate(task, candidates(name)["solution"])
                if result.runtime is None:
                    break
                medians.append(result.runtime.median_ms)
            if medians:
                rows.append(
                    {
                        "task": name,
                        "medians_ms": medians,
                        "spread": max(medians) / min(medians),
                    }
                )
                print(f"spread {name}: {rows[-1]}", flush=True)
    return rows


def print_tables(modes: list[dict], spreads: list[dict]) -> None:
    print("\n## Throughput (evaluations per minute)")
    print("| mode | evaluations | wall s | evals/min | vs fresh |")
    print("|---|---|---|---|---|")
    fresh = next((m for m in modes if m["mode"] == "fresh"), None)
    for mode in modes:
        ratio = mode["evals_per_min"] / fresh["evals_per_min"] if fresh else float("nan")
        print(
            f"| {mode['mode']} | {len(mode['rows'])} | {mode['wall_s']:.1f} | "
            f"{mode['evals_per_min']:.1f} | {ratio:.2f}x |"
        )

    print("\n## Per level (evaluations per minute)")
    print("| level | " + " | ".join(m["mode"] for m in modes) + " | last vs first |")
    print("|---" * (len(modes) + 2) + "|")
    for level in sorted(modes[0]["levels"]):
        rates = [m["levels"][level]["evals_per_min"] for m in modes]
        cells = " | ".join(f"{r:.1f}" for r in rates)
        print(f"| {level} | {cells} | {rates[-1] / rates[0]:.2f}x |")

    print("\n## Time per phase (mean seconds per evaluation)")
    keys = ["queue_s", "startup_s", "compile_s", "check_s", "timing_s", "kernel_s", "total_s"]
    print("| mode | " + " | ".join(keys) + " | overhead_s |")
    print("|---" * (len(keys) + 2) + "|")
    for mode in modes:
        means = [statistics.fmean(r["phases"][k] for r in mode["rows"]) for k in keys]
        overhead = statistics.fmean(r["overhead_s"] for r in mode["rows"])
        print(
            f"| {mode['mode']} | " + " | ".join(f"{v:.3f}" for v in means) + f" | {overhead:.3f} |"
        )

    print("\n## Judge overhead per evaluation (total - compile - kernel runs), pool-1")
    pool1 = next((m for m in modes if m["mode"] == "pool-1"), modes[0])
    print("| candidate | n | mean s | max s |")
    print("|---|---|---|---|")
    for label in ("solution", "variant", "incorrect", "compile_error", "runtime_error"):
        values = [r["overhead_s"] for r in pool1["rows"] if r["candidate"] == label]
        if values:
            print(
                f"| {label} | {len(values)} | {statistics.fmean(values):.3f} | {max(values):.3f} |"
            )

    print_spread(spreads)


def print_spread(spreads: list[dict]) -> None:
    if spreads:
        print("\n## Spread of the reported median over re-evaluations")
        print("| task | medians (ms) | max/min |")
        print("|---|---|---|")
        for row in spreads:
            medians = ", ".join(f"{m:.4f}" for m in row["medians_ms"])
            print(f"| {row['task']} | {medians} | {row['spread']:.4f} |")


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--modes", default="fresh,pool-1,pool-N")
    parser.add_argument("--spread-tasks", default="softmax,gemm_bias_relu,decode_attention")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--home", default=".bench-home")
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--merge",
        nargs="+",
        default=None,
        help="Print the tables of earlier --out files together (modes run in separate sessions).",
    )
    args = parser.parse_args()
    if args.merge:
        reports = [json.loads(Path(path).read_text()) for path in args.merge]
        modes = [mode for report in reports for mode in report["modes"]]
        spreads = [row for report in reports for row in report["spread"]]
        print_tables(modes, spreads)
        return

    home = Path(args.home).resolve()
    store = Store(home / "adaexplore.sqlite3")
    tasks = [get_bundled_task(name) for name in args.tasks.split(",")]
    jobs = [(task, label, code) for task in tasks for label, code in candidates(task.name).items()]
    report: dict = {"tasks": [t.name for t in tasks], "device": args.device}

    report["baselines"] = await warm_baselines(args.device, home, store, tasks)
    modes = []
    for mode in filter(None, args.modes.split(",")):
        if mode == "fresh":
            settings = judge_settings(args.device, 1, reuse=False)
        elif mode == "pool-1":
            settings = judge_settings(args.device, 1, reuse=True)
        elif mode == "pool-N":
            settings = judge_settings(args.device, args.workers, reuse=True)
            mode = f"pool-{args.workers}"
        else:
            raise SystemExit(f"unknown mode {mode}")
        modes.append(await run_mode(mode, settings, home, store, jobs))
    report["modes"] = modes
    spread_tasks = [t for t in args.spread_tasks.split(",") if t]
    report["spread"] = await spread(args.device, home, store, spread_tasks, args.repeats)
    if modes:
        print_tables(modes, report["spread"])
    else:
        print_spread(report["spread"])
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
