"""Profile one evaluation in-process (no sandbox), to see where the judge's own time goes.

    python benchmarks/profile_evaluation.py decode_attention [--device cuda] [--top 25]

Runs the same child-side code as the judge, in this process, under cProfile, and prints the
functions with the most cumulative time. For development only: candidate code runs unsandboxed.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import secrets
import tempfile
import time

from adaexplore_mcp.config import JudgeSettings
from adaexplore_mcp.judge.evaluation import Evaluation
from adaexplore_mcp.judge.harness import Channel
from adaexplore_mcp.judge.protocol import ChildJob
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task


class _Sink(Channel):
    def __init__(self) -> None:
        self.started = time.perf_counter()

    def phase(self, phase) -> None:
        print(f"{time.perf_counter() - self.started:8.3f}s  {phase.value}")

    def report(self, kind, body) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("task")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    settings = JudgeSettings()
    task = get_bundled_task(args.task)
    job = ChildJob(
        kind="eval",
        task=task,
        code=bundled_solution(args.task),
        device="cpu" if args.device == "cpu" else "cuda:0",
        seed=secrets.randbits(62),
        trials=settings.trials,
        odd_trials=settings.odd_trials,
        tolerances=settings.tolerances,
        timing=settings.timing,
    )
    os.chdir(tempfile.mkdtemp())
    if job.device != "cpu":
        import torch

        torch.cuda.init()
    profiler = cProfile.Profile()
    profiler.enable()
    result = Evaluation(job, _Sink()).run()
    profiler.disable()
    print(result.status.value, result.message)
    print(result.phases.model_dump())
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
