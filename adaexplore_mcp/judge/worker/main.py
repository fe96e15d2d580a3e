"""A warm worker: imports torch and triton once, then runs each job in freshly forked processes.

Started by the pool as ``python -m adaexplore_mcp.judge.worker.main --control-fd R --events-fd
W``. The worker never touches CUDA (a CUDA context does not survive ``fork``) and never holds a
seed; it forks the job's processes (``processes``), relays the trusted process's phases and
report, drains what the user-code processes print, enforces the wall-clock limit, and cleans up
every process a job left behind.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback

from adaexplore_mcp.judge.result import SandboxReport
from adaexplore_mcp.judge.sandbox import limits, namespaces
from adaexplore_mcp.judge.wire.frames import read_frame, write_frame
from adaexplore_mcp.judge.wire.jobs import (
    DoneMessage,
    JobMessage,
    ReadyMessage,
    ShutdownMessage,
    to_worker,
)
from adaexplore_mcp.judge.worker.kept import KeptTasks
from adaexplore_mcp.judge.worker.resident import Residents
from adaexplore_mcp.judge.worker.spares import Spares
from adaexplore_mcp.judge.worker.supervise import Shutdown, supervise


class Worker:
    def __init__(self, control_fd: int, events_fd: int) -> None:
        self.control_fd = control_fd
        self.events_fd = events_fd
        self.env = dict(os.environ)
        self.private_dirs = tuple(
            p for p in os.environ.get("ADAEXPLORE_PRIVATE_DIRS", "").split(os.pathsep) if p
        )
        self.runtime = tempfile.mkdtemp(prefix="adaexplore-worker-")
        self._triton_helpers: dict[str, bytes] | None = None
        self.spares = Spares(self.job_root)
        self.residents = Residents()
        self.kept_tasks = KeptTasks()

    def serve(self) -> None:
        started = time.perf_counter()
        for name in PRELOADED:
            importlib.import_module(name)
        import torch
        import triton

        _warm_triton(torch)
        # what is loaded now lives as long as the worker and every process it forks: out of the
        # collector's sight, a full collection in a child no longer walks torch's and Triton's
        # objects (one took 0.15 s of a candidate's start-up, and more in its timed calls)
        gc.freeze()
        write_frame(
            self.events_fd,
            ReadyMessage(
                pid=os.getpid(),
                torch=torch.__version__,
                triton=triton.__version__,
                python=sys.version.split()[0],
                import_s=time.perf_counter() - started,
                sandbox=self._self_test(),
            ),
        )
        try:
            while True:
                frame = self._next_frame()
                if frame is None:
                    return
                message = to_worker.validate_json(frame[0])
                if isinstance(message, ShutdownMessage):
                    return
                if isinstance(message, JobMessage):
                    try:
                        outcome = supervise(message, self)
                    except Shutdown:
                        return
                    write_frame(self.events_fd, DoneMessage(id=message.id, outcome=outcome))
                # a CancelMessage for a job that already ended needs no answer
        finally:
            # back in the collector's sight, so that the exit frees them: Triton's bindings
            # report every object of theirs still alive then ("nanobind: leaked ...")
            gc.unfreeze()
            self.spares.close()
            self.kept_tasks.close()
            self.residents.retire()
            _reap_all(within_s=5.0)
            shutil.rmtree(self.runtime, ignore_errors=True)

    def kept_pids(self) -> set[int]:
        """The children that outlive a job: the next job's spare set, the resident pair and a
        kept task process."""
        return self.spares.pids() | self.residents.pids() | self.kept_tasks.pids()

    def job_root(self) -> str:
        return tempfile.mkdtemp(prefix="job-", dir=self.runtime)

    def triton_helpers(self, device: str) -> dict[str, bytes]:
        """Triton's compiled helper, for the user-code processes of a GPU job; built on the
        first GPU job (about 0.4 s, once)."""
        if device == "cpu":
            return {}
        if self._triton_helpers is None:
            from adaexplore_mcp.judge.worker import triton_helpers

            self._triton_helpers = triton_helpers.build(self.runtime)
        return self._triton_helpers

    def _next_frame(self) -> tuple[bytes, bytes] | None:
        """The next frame from the pool. While processes of earlier jobs are still exiting (a
        CUDA context takes a while to tear down), they are killed and reaped in the meantime,
        so a result never waits for its processes' exit. Once none is left, the resident trusted
        process may free the memory those jobs shared."""
        while limits.kill_children(keep=self.kept_pids()):
            readable, _, _ = select.select([self.control_fd], [], [], 0.01)
            if readable:
                break
        else:
            self.residents.reaped()
        return read_frame(self.control_fd)

    def _self_test(self) -> SandboxReport:
        """What the sandbox takes on this machine, seen by a throwaway child that sets it up."""
        from adaexplore_mcp.judge.worker.selftest import sandbox_report

        return sandbox_report(self)


def _reap_all(within_s: float) -> None:
    """Kill and reap every child (a spare set among them) before this process exits."""
    deadline = time.monotonic() + within_s
    while limits.kill_children() and time.monotonic() < deadline:
        time.sleep(0.01)


# Imported once here so that every forked process of a job starts with them loaded: the code of
# every process of a job, and what it imports lazily on every job (torch's FLOP counter, which
# the task's process runs on each evaluation, costs 0.15-0.35 s to import).
PRELOADED = (
    "torch",
    "torch._dynamo",
    "torch.utils.flop_counter",
    "triton",
    "adaexplore_mcp.judge.candidate.harness",
    "adaexplore_mcp.judge.reference.harness",
    "adaexplore_mcp.judge.trusted.baseline",
    "adaexplore_mcp.judge.trusted.calibrator",
    "adaexplore_mcp.judge.trusted.evaluation",
    "adaexplore_mcp.judge.trusted.lint",
    "adaexplore_mcp.judge.trusted.main",
    "adaexplore_mcp.judge.trusted.resident",
)


def _warm_triton(torch) -> None:
    """Hash Triton's own sources once here (its compile cache key; ~0.5 s that every child
    would otherwise spend before its first compile). Pure Python: no thread, no CUDA. (Building
    Triton's CUDA driver module here was tried on an H200: it left the worker with extra
    threads, and forked children then failed to start.)"""
    try:
        from triton.runtime.cache import triton_key

        triton_key()
    except Exception:
        traceback.print_exc()
    if torch.cuda.is_initialized():
        raise RuntimeError("the worker initialized CUDA; its forked children could not use it")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--events-fd", type=int, required=True)
    args = parser.parse_args(argv)
    limits.die_with_parent()
    limits.become_subreaper()
    namespaces.set_dumpable(False)  # no process of this user may trace it or read its memory
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the pool decides when workers stop
    Worker(args.control_fd, args.events_fd).serve()


if __name__ == "__main__":
    main()
