"""A problem set in one command against one `eval` process per kernel.

    python benchmarks/problem_set_throughput.py --device cuda --copies 3 --out set.json

Writes the bundled tasks that have a Triton solution as a KernelBench-format problem set
(``problems/levelL/N_name.py``) and their solutions as kernels (``kernels/levelL/N.py``, and
``--copies`` variants of each, differing in a comment, so there is more than one kernel a
problem). Baselines are timed first, by a set run whose results are thrown away, and cached in
the judge's home, so both ways measure kernel evaluation only. Then it times:

- ``set``: ``adaexplore-mcp eval PROBLEMS KERNELS --out results.jsonl``, one process;
- ``per-kernel``: ``adaexplore-mcp eval PROBLEM KERNEL --json``, one process per kernel, one
  after another (what a shell loop over a released kernel set does).

Prints kernels a minute for each and whether their verdicts agree; writes both to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from adaexplore_mcp.tasks import bundled_solution, get_bundled_task, solution_names


def write_set(root: Path, copies: int) -> tuple[Path, Path, list[tuple[Path, Path]]]:
    problems, kernels = root / "problems", root / "kernels"
    pairs = []
    for number, name in enumerate(solution_names(), start=1):
        task = get_bundled_task(name)
        level = f"level{task.level or 1}"
        problem = problems / level / f"{number}_{name}.py"
        problem.parent.mkdir(parents=True, exist_ok=True)
        problem.write_text(task.source)
        code = bundled_solution(name) or ""
        for copy in range(copies):
            kernel = kernels / level / (f"{number}.py" if copy == 0 else f"{number}_v{copy}.py")
            kernel.parent.mkdir(parents=True, exist_ok=True)
            kernel.write_text(code + ("" if copy == 0 else f"\n# variant {copy}\n"))
            pairs.append((problem, kernel))
    return problems, kernels, pairs


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "adaexplore_mcp.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="strict")
    parser.add_argument("--copies", type=int, default=2, help="kernels a problem")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    policy = ("--device", args.device, "--precision", args.precision)

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ADAEXPLORE_")}
        env["ADAEXPLORE_HOME"] = str(root / "home")
        problems, kernels, pairs = write_set(root, args.copies)
        print(f"{len(pairs)} kernels over {len(pairs) // args.copies} problems", flush=True)

        warm = cli("eval", str(problems), str(kernels), *policy, env=env)
        if warm.returncode not in (0, 2):
            sys.exit(f"the warm-up set run failed:\n{warm.stderr}")

        started = time.monotonic()
        whole = cli(
            "eval", str(problems), str(kernels), *policy, "--json",
            "--out", str(root / "results.jsonl"), env=env,
        )  # fmt: skip
        set_s = time.monotonic() - started
        if whole.returncode != 0:
            sys.exit(f"the set run failed:\n{whole.stderr}")
        report = json.loads(whole.stdout)
        set_verdicts = {row["kernel"]: row["status"] for row in report["summary"]["rows"]}

        started = time.monotonic()
        one_by_one = {}
        for problem, kernel in pairs:
            done = cli("eval", str(problem), str(kernel), *policy, "--json", env=env)
            relative = kernel.relative_to(kernels).as_posix()
            one_by_one[relative] = (
                json.loads(done.stdout)["status"] if done.returncode == 0 else "not judged"
            )
        each_s = time.monotonic() - started

    rows = [("set (one command)", set_s), ("per-kernel eval", each_s)]
    print(f"{'way':<20}{'seconds':>10}{'kernels/min':>14}")
    for label, seconds in rows:
        print(f"{label:<20}{seconds:>10.1f}{60 * len(pairs) / seconds:>14.1f}")
    print(f"speedup of the set command: {each_s / set_s:.2f}x")
    agree = set_verdicts == one_by_one
    print(f"verdicts agree: {agree}")
    summary = report["summary"]
    print(
        f"summary: {summary['verdicts']} fast_p {summary['fast_p']} "
        f"geomean {summary['geomean_speedup']} capped mean {summary['capped_mean']}"
    )
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "kernels": len(pairs),
                    "set_s": set_s,
                    "per_kernel_s": each_s,
                    "verdicts_agree": agree,
                    "set_verdicts": set_verdicts,
                    "per_kernel_verdicts": one_by_one,
                    "summary": summary,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
