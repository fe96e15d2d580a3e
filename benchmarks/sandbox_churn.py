"""How fast the worker can start sandboxed processes, one at a time and several at once.

An evaluation forks its user-code processes from a worker that imported torch, and each enters
the sandbox (``judge.sandbox.enter``: user, mount, PID and network namespaces, a filesystem view
of bind mounts made read-only, limits, seccomp) before it makes its CUDA context. On an H200
(``notes/trusted-judge-h200.md``) throughput stops growing at two workers, bound by something
serialized of about 1.2-1.3 s an evaluation, of which making and ending the contexts is about
0.4 s (``benchmarks/context_churn.py``). The namespaces and mounts take kernel-wide locks; this
measures what entering the sandbox costs, and whether it serializes: every process is forked,
enters the sandbox and exits, ``--concurrency`` at a time, and the same with plain forks
(``--plain``) as the floor. The sandbox is required whole (a process that could not isolate its
filesystem or filter its system calls counts as failed).

On the development machine (2 CPUs, no GPU, nothing else running, 2026-11-29), 16 processes
a row: a sandboxed process took 0.042 s from fork to reaped one at a time (23/s), 0.040 s two
at a time (48/s: no lock between them) and 0.072 s four at a time (50/s: two CPUs); a plain
fork 0.009-0.021 s (112-179/s). About 0.03 s more than a fork for each of an evaluation's
processes: not by itself the 1.2 s. On the GPU's host it was not measured yet.

    python benchmarks/sandbox_churn.py [--processes 24] [--concurrency 1,2,4,8] [--plain]

CPU only: nothing here touches a GPU.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import tempfile
import time

import torch  # noqa: F401  (forked from a process that imported torch, as the worker's are)

from adaexplore_mcp.judge import sandbox
from adaexplore_mcp.judge.sandbox import limits


def _child(root: str, sandboxed: bool) -> None:
    """Runs in a forked child; never returns."""
    code = 0
    try:
        if sandboxed:
            _ours, theirs = socket.socketpair()
            _out_r, out_w = os.pipe()
            _setup_r, setup_w = os.pipe()
            sandbox.enter(
                sandbox.Spec(
                    socket_fd=theirs.fileno(),
                    output_fd=out_w,
                    setup_fd=setup_w,
                    limits=limits.Limits(file_bytes=2**20),
                    env={},
                    fallback_root=root,
                )
            )
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def churn(processes: int, concurrency: int, sandboxed: bool) -> tuple[float, list[float], int]:
    """(seconds for all, each process's seconds from fork to reaped, failures)."""
    root = tempfile.mkdtemp(prefix="sandbox-churn-")
    started: dict[int, float] = {}
    lasted: list[float] = []
    failures = 0
    begun = time.perf_counter()
    try:
        remaining = processes
        while remaining or started:
            while remaining and len(started) < concurrency:
                at = time.perf_counter()
                pid = os.fork()
                if pid == 0:
                    _child(os.path.join(root, str(os.getpid())), sandboxed)
                started[pid] = at
                remaining -= 1
            pid, status = os.wait()
            if pid in started:
                lasted.append(time.perf_counter() - started.pop(pid))
                failures += os.waitstatus_to_exitcode(status) != 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return time.perf_counter() - begun, lasted, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=24)
    parser.add_argument("--concurrency", default="1,2,4,8")
    parser.add_argument("--plain", action="store_true", help="plain forks too, as the floor")
    args = parser.parse_args()
    kinds = [True, False] if args.plain else [True]
    print(f"{os.cpu_count()} CPUs; {args.processes} processes a row")
    print(f"{'kind':10} {'at once':>7} {'per s':>7} {'median s':>9} {'max s':>7} {'failed':>6}")
    for sandboxed in kinds:
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            total, lasted, failures = churn(args.processes, concurrency, sandboxed)
            print(
                f"{'sandboxed' if sandboxed else 'plain':10} {concurrency:7d} "
                f"{args.processes / total:7.1f} {statistics.median(lasted):9.4f} "
                f"{max(lasted):7.4f} {failures:6d}"
            )


if __name__ == "__main__":
    main()
