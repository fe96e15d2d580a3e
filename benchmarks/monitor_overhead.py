"""Where the candidate's process spends the judge's own time: the monitor's start-up (before the
kernel is imported) and its work around each call of forward, piece by piece.

    python benchmarks/monitor_overhead.py --device cuda --calls 20 [--tasks softmax gemm_bias_relu]

Runs in one process with no sandbox (a measurement of the monitor, not of the judge): imports
a bundled solution under an installed ``Monitor``, then calls forward bare and inside
``Monitor.call`` in each mode, and prints the median milliseconds of each piece.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch

from adaexplore_mcp.judge.candidate import profiler as profiler_module
from adaexplore_mcp.judge.candidate import signals as signals_module
from adaexplore_mcp.judge.subject.loading import load_module, start_device
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task

PIECES = defaultdict(list)


def timed(name: str, function: Any) -> Any:
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            PIECES[name].append((time.perf_counter() - started) * 1e3)

    return call


def instrument() -> None:
    """Time the pieces the monitor is made of, where ``signals`` looks them up."""
    for name in ("glue_overloads", "glue_tables", "installed_code", "changed_glue"):
        setattr(signals_module, name, timed(name, getattr(signals_module, name)))
    signals_module._native_threads_stay_above = timed(
        "native_threads_settle", signals_module._native_threads_stay_above
    )
    profile_class = profiler_module.CallProfiler
    profile_class.__enter__ = timed("profiler_enter", profile_class.__enter__)
    profile_class.__exit__ = timed("profiler_exit", profile_class.__exit__)
    profile_class.report = timed("profiler_report", profile_class.report)
    monitor_class = signals_module.Monitor
    monitor_class.install = timed("install_total", monitor_class.install)


def install(device: torch.device, workdir: Path) -> tuple[Any, dict[str, float]]:
    """One monitor for the process, as in the judge (its guards are installed once)."""
    monitor = signals_module.Monitor(
        kernel_path=str(workdir / "kernel.py"), workdir=str(workdir), device=device
    )
    PIECES.clear()
    monitor.install(audit=False)
    return monitor, {key: statistics.median(values) for key, values in PIECES.items()}


def measure(name: str, monitor: Any, device: torch.device, calls: int, workdir: Path) -> dict:
    task = get_bundled_task(name)
    task_path = workdir / f"task_{name}.py"
    task_path.write_text(task.source)
    task_module = load_module(str(task_path), f"task_{name}")
    kernel_path = workdir / f"kernel_{name}.py"
    kernel_path.write_text(bundled_solution(name))
    module = load_module(str(kernel_path), f"kernel_{name}")
    with torch.device(device):
        model = module.ModelNew(*task_module.get_init_inputs()).to(device)
        inputs = [x.to(device) if torch.is_tensor(x) else x for x in task_module.get_inputs()]

    def forward() -> None:
        with torch.no_grad():
            model(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(3):  # compile and warm outside any measurement
        with monitor.call("check"):
            forward()
    row: dict[str, Any] = {"task": name, "calls": {}}
    bare = []
    for _ in range(calls):
        started = time.perf_counter()
        forward()
        bare.append((time.perf_counter() - started) * 1e3)
    row["bare_ms"] = statistics.median(bare)
    for mode, poison in (("check", True), ("timed", False), ("profile", False)):
        PIECES.clear()
        whole = []
        for _ in range(calls):
            started = time.perf_counter()
            with monitor.call(mode, poison=poison):
                forward()
            whole.append((time.perf_counter() - started) * 1e3)
        pieces = {key: statistics.median(values) for key, values in PIECES.items()}
        row["calls"][mode] = {"whole_ms": statistics.median(whole), **pieces}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--tasks", nargs="*", default=["softmax"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    instrument()
    device = start_device("cpu" if args.device == "cpu" else args.device)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        import torch._dynamo  # noqa: F401  (the monitor imports it first; apart from its own time)

        dynamo_ms = (time.perf_counter() - started) * 1e3
        monitor, startup = install(device, Path(scratch))
        for name in args.tasks:
            rows.append(measure(name, monitor, device, args.calls, Path(scratch)))
    print(
        f"start-up: import torch._dynamo {dynamo_ms:.1f}, then "
        + ", ".join(f"{k} {v:.1f}" for k, v in startup.items())
    )
    for row in rows:
        print(f"{row['task']}: forward alone {row['bare_ms']:.2f} ms")
        for mode, pieces in row["calls"].items():
            print(f"  {mode}: " + ", ".join(f"{k} {v:.2f}" for k, v in pieces.items()))
    if args.out:
        args.out.write_text(json.dumps({"startup_ms": startup, "rows": rows}, indent=1))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
