"""How fast forked processes can make and tear down a CUDA context, alone and side by side.

    python benchmarks/context_churn.py --processes 24
    python benchmarks/context_churn.py --processes 24 --env CUDA_DEVICE_MAX_CONNECTIONS=1

Every evaluation forks its user-code processes from a warm worker (torch imported, CUDA not
initialised), and each makes a context and later ends with it. The driver does much of that
one process at a time, so this is a ceiling on evaluations a minute that no number of workers
lifts. For each concurrency it prints contexts made and ended a second, and the medians of the
time to make one (``torch.zeros(1, device="cuda")``) and of a process's whole life.
``--env`` sets variables in each child before CUDA starts there: what the driver reads when it
makes a context (how many hardware queues a context gets, say) may change what making one costs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch  # imported before the forks, CUDA left uninitialised, as in the judge's worker

from adaexplore_mcp.judge.devices import nvidia_driver_present


def _child(report_fd: int, env: dict[str, str]) -> None:
    code = 1
    try:
        os.environ.update(env)
        started = time.perf_counter()
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        os.write(report_fd, f"{time.perf_counter() - started:.6f}".encode())
        code = 0
    finally:  # a fork never returns into the parent's loop
        os._exit(code)


def churn(total: int, concurrency: int, env: dict[str, str]) -> dict[str, object]:
    made: list[float] = []
    lives: list[float] = []
    running: dict[int, tuple[int, float]] = {}
    launched = 0
    started = time.perf_counter()
    while launched < total or running:
        while launched < total and len(running) < concurrency:
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_fd)
                _child(write_fd, env)
            os.close(write_fd)
            running[pid] = (read_fd, time.perf_counter())
            launched += 1
        pid, _ = os.wait()
        read_fd, forked = running.pop(pid)
        lives.append(time.perf_counter() - forked)
        text = os.read(read_fd, 64).decode()
        os.close(read_fd)
        if text:
            made.append(float(text))
    wall = time.perf_counter() - started
    return {
        "env": env,
        "concurrency": concurrency,
        "processes": total,
        "contexts_per_s": round(total / wall, 2),
        "make_median_s": round(statistics.median(made), 3) if made else float("nan"),
        "life_median_s": round(statistics.median(lives), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=24)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="set in every child"
    )
    args = parser.parse_args()
    if any("=" not in item for item in args.env):
        parser.error("--env takes KEY=VALUE")
    env = dict(item.split("=", 1) for item in args.env)
    if not nvidia_driver_present():  # asks the driver without initialising CUDA before the forks
        raise SystemExit("needs a CUDA GPU")
    for concurrency in args.concurrency:
        print(json.dumps(churn(args.processes, concurrency, env)), flush=True)


if __name__ == "__main__":
    main()
