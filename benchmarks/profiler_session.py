"""What one torch.profiler session costs the candidate's process: the judge profiles every
checked call (operator records on every thread), and on a GPU a session's host time lands in
every evaluation's wall time.

    python benchmarks/profiler_session.py --device cuda:0 --sessions 50

Prints the median milliseconds of one session (enter, a small op, exit, events read) per
configuration: operator records on every thread or the calling thread only, and with the GPU's
kernels traced.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile


def session_ms(device: str, *, all_threads: bool, kernels: bool, sessions: int) -> float:
    from torch._C._profiler import _ExperimentalConfig

    x = torch.randn(256, 256, device=device)
    activities = [ProfilerActivity.CPU]
    if kernels:
        activities.append(ProfilerActivity.CUDA)
    kwargs = {"experimental_config": _ExperimentalConfig(profile_all_threads=True)}
    times = []
    for _ in range(sessions + 2):  # the first two start the profiler's threads
        started = time.perf_counter()
        with profile(activities=activities, **(kwargs if all_threads else {})) as session:
            x.clone().add_(1)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
        list(session.events())
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times[2:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--sessions", type=int, default=50)
    args = parser.parse_args()
    configs = [(True, False), (False, False)]
    if args.device.startswith("cuda"):
        configs.append((True, True))
    for all_threads, kernels in configs:
        ms = session_ms(
            args.device, all_threads=all_threads, kernels=kernels, sessions=args.sessions
        )
        print(
            f"{args.device} threads={'all' if all_threads else 'calling'} "
            f"kernels={'yes' if kernels else 'no'}: {ms:.2f} ms a session"
        )


if __name__ == "__main__":
    main()
