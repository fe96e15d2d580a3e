"""The bundled suite on a GPU: every Triton solution judged (verdict, runtime, speedups over
eager and torch.compile), and the task lint on the benchmark and odd shapes.

    python benchmarks/suite_on_gpu.py --device cuda:0 --out suite.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from adaexplore_mcp.judge import LocalJudge
from adaexplore_mcp.judge.settings import JudgeSettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import bundled_solution, bundled_tasks, get_bundled_task, solution_names


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--home", default=".bench-home")
    parser.add_argument("--skip-lint", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    home = Path(args.home).resolve()
    settings = JudgeSettings(device=args.device, workers_per_device=args.workers, timeout_s=900)
    report: dict = {}
    async with LocalJudge(settings, home=home, store=Store(home / "adaexplore.sqlite3")) as judge:
        print(f"judge on {judge.devices} {judge.versions()}", flush=True)
        started = time.monotonic()

        async def judge_solution(name: str):
            result = await judge.evaluate(get_bundled_task(name), bundled_solution(name) or "")
            print(f"{name}: {result.status.value} {result.message}", flush=True)
            return result

        results = await asyncio.gather(*(judge_solution(n) for n in solution_names()))
        report["solutions_s"] = time.monotonic() - started
        report["solutions"] = [r.model_dump(mode="json") for r in results]

        lints = []
        if not args.skip_lint:
            started = time.monotonic()
            lints = await asyncio.gather(*(judge.lint(t) for t in bundled_tasks()))
            report["lint_s"] = time.monotonic() - started
            report["lint"] = [r.model_dump(mode="json") for r in lints]

    print("\n## Bundled solutions on the GPU")
    print("| task | level | verdict | kernel ms | eager ms | compile ms | vs eager | vs compile |")
    print("|---|---|---|---|---|---|---|---|")
    for result in results:
        task = get_bundled_task(result.task)

        def ms(stats) -> str:
            return f"{stats.median_ms:.4f}" if stats else "-"

        def x(value) -> str:
            return f"{value:.2f}x" if value else "-"

        print(
            f"| {result.task} | {task.level} | {result.status.value} | {ms(result.runtime)} | "
            f"{ms(result.eager)} | {ms(result.compiled)} | {x(result.speedup_eager)} | "
            f"{x(result.speedup_compile)} |"
        )
    if lints:
        flagged = [lint for lint in lints if not lint.ok]
        print(f"\n## Lint on GPU shapes: {len(lints) - len(flagged)} of {len(lints)} tasks clean")
        for lint in flagged:
            print(f"- {lint.task}: {lint.error or [f.model_dump() for f in lint.findings]}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
