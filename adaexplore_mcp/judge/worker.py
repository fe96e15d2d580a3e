"""A warm worker: imports torch and triton once, then runs each job in a fresh forked child.

Started by the pool as ``python -m adaexplore_mcp.judge.worker --control-fd R --events-fd W``.
The worker itself never touches CUDA (a CUDA context does not survive ``fork``); each child
creates its own. The worker enforces the wall-clock limit, relays the child's progress, turns
a crash into an outcome and cleans up every process the child left behind.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import selectors
import shutil
import signal
import sys
import tempfile
import time
import traceback

from adaexplore_mcp.judge import sandbox
from adaexplore_mcp.judge.protocol import (
    CancelMessage,
    ChildOutcome,
    DoneMessage,
    FrameBuffer,
    JobMessage,
    PhaseMessage,
    ReadyMessage,
    ReportMessage,
    ShutdownMessage,
    from_worker,
    read_frame,
    to_worker,
    write_frame,
)
from adaexplore_mcp.judge.result import Phase


class _Shutdown(Exception):
    pass


class Worker:
    def __init__(self, control_fd: int, events_fd: int) -> None:
        self.control_fd = control_fd
        self.events_fd = events_fd
        self.child_env_base = dict(os.environ)

    def serve(self) -> None:
        started = time.perf_counter()
        import torch
        import torch._dynamo
        import triton

        # the child-side harness too, so every forked child starts with it loaded
        import adaexplore_mcp.judge.baseline_job
        import adaexplore_mcp.judge.evaluation
        import adaexplore_mcp.judge.lint  # noqa: F401

        _warm_triton(torch)

        write_frame(
            self.events_fd,
            ReadyMessage(
                pid=os.getpid(),
                torch=torch.__version__,
                triton=triton.__version__,
                python=sys.version.split()[0],
                import_s=time.perf_counter() - started,
            ),
        )
        while True:
            raw = self._next_message()
            if raw is None:
                return
            message = to_worker.validate_json(raw)
            if isinstance(message, ShutdownMessage):
                return
            if isinstance(message, JobMessage):
                try:
                    outcome = self.run_job(message)
                except _Shutdown:
                    return
                write_frame(self.events_fd, DoneMessage(id=message.id, outcome=outcome))
            # a CancelMessage for a job that already ended needs no answer

    def _next_message(self) -> bytes | None:
        """The next frame from the pool. While children of earlier jobs are still exiting (a
        CUDA context takes a while to tear down), they are killed and reaped in the meantime,
        so a result never waits for its child's exit."""
        while sandbox.kill_children():
            readable, _, _ = select.select([self.control_fd], [], [], 0.01)
            if readable:
                break
        return read_frame(self.control_fd)

    def run_job(self, job: JobMessage) -> ChildOutcome:
        workdir = tempfile.mkdtemp(prefix="adaexplore-eval-")
        read_end, write_end = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_end)
            self._child_main(job, workdir, write_end)
        os.close(write_end)
        try:
            return self._supervise(job, pid, read_end, started, workdir)
        finally:
            os.close(read_end)
            sandbox.kill_group(pid)
            sandbox.kill_children()
            shutil.rmtree(workdir, ignore_errors=True)

    def _child_main(self, job: JobMessage, workdir: str, result_fd: int) -> None:
        code = 0
        try:
            env = sandbox.scrubbed_environment(
                self.child_env_base,
                {
                    "HOME": workdir,
                    "TMPDIR": workdir,
                    "TRITON_CACHE_DIR": os.path.join(workdir, "triton-cache"),
                    "PYTHONDONTWRITEBYTECODE": "1",
                },
            )
            if job.child.cache_dir:  # trusted baseline jobs keep compiled baselines across runs
                env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(job.child.cache_dir, "inductor")
                env["TRITON_CACHE_DIR"] = os.path.join(job.child.cache_dir, "triton")
            settings = job.child.sandbox
            limits = sandbox.Limits(
                output_bytes=job.child.output_limit_bytes,
                cpu_seconds=int(job.timeout_s * settings.cpu_time_factor) + 10,
                memory_bytes=settings.memory_limit_mb * 2**20 if settings.memory_limit_mb else None,
                extra_processes=settings.max_processes,
                isolate_network=settings.isolate_network,
            )
            isolated = sandbox.enter(workdir, result_fd, limits=limits, env=env)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            from adaexplore_mcp.judge.harness import Channel, run_child_job

            run_child_job(job.child, Channel(sandbox.RESULT_FD, network_isolated=isolated))
        except BaseException:
            code = 70
            with contextlib.suppress(BaseException):
                traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):  # the candidate's prints belong in its log
                with contextlib.suppress(BaseException):
                    stream.flush()
            os._exit(code)

    def _supervise(
        self, job: JobMessage, pid: int, read_end: int, started: float, workdir: str
    ) -> ChildOutcome:
        deadline = started + job.timeout_s
        buffer = FrameBuffer()
        report: dict | None = None
        last_phase = Phase.COMPILING
        startup_s = 0.0
        seen_phase = False
        end: str | None = None
        status: int | None = None

        selector = selectors.DefaultSelector()
        selector.register(read_end, selectors.EVENT_READ, "child")
        selector.register(self.control_fd, selectors.EVENT_READ, "control")
        control = FrameBuffer()
        pipe_open = True
        try:
            while True:
                if not pipe_open:
                    status = self._wait_child(pid, deadline)
                    if status is None:
                        end = "timeout"
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    end = "timeout"
                    break
                for key, _ in selector.select(timeout=remaining):
                    if key.data == "control":
                        chunk = os.read(self.control_fd, 65536)
                        if not chunk:
                            raise _Shutdown
                        for raw in control.feed(chunk):
                            message = to_worker.validate_json(raw)
                            if isinstance(message, ShutdownMessage):
                                raise _Shutdown
                            if isinstance(message, CancelMessage) and message.id == job.id:
                                end = "cancelled"
                    else:
                        chunk = os.read(read_end, 65536)
                        if not chunk:
                            pipe_open = False
                            selector.unregister(read_end)
                            continue
                        for raw in buffer.feed(chunk):
                            message = from_worker.validate_json(raw)
                            if isinstance(message, PhaseMessage):
                                now = time.monotonic() - started
                                if not seen_phase:
                                    seen_phase, startup_s = True, now
                                last_phase = message.phase
                                relayed = PhaseMessage(
                                    id=job.id, phase=message.phase, elapsed_s=now
                                )
                                write_frame(self.events_fd, relayed)
                            elif isinstance(message, ReportMessage):
                                report, end = message.report, "reported"
                if end is not None:
                    break
        except _Shutdown:
            sandbox.kill_group(pid)
            raise
        finally:
            selector.close()

        if status is None and end != "reported":  # its exit status tells how it died
            sandbox.kill_group(pid)
            # a child cancelled right after the fork has no process group of its own yet
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            status = self._wait_child(pid, time.monotonic() + 10)
        elapsed = time.monotonic() - started
        if end is None:
            end = "reported" if report is not None else "crashed"
        exit_code = signal_name = None
        if status is not None:
            if os.WIFSIGNALED(status):
                signal_name = signal.Signals(os.WTERMSIG(status)).name
            elif os.WIFEXITED(status):
                exit_code = os.WEXITSTATUS(status)
        return ChildOutcome(
            end=end,  # type: ignore[arg-type]
            report=report if end == "reported" else None,
            last_phase=last_phase,
            exit_code=exit_code,
            signal=signal_name,
            elapsed_s=elapsed,
            startup_s=startup_s,
            output_tail=sandbox.read_output_tail(workdir),
        )

    @staticmethod
    def _wait_child(pid: int, deadline: float) -> int | None:
        """Wait for the child until the deadline; its wait status, or None if still running."""
        while True:
            finished, status = os.waitpid(pid, os.WNOHANG)
            if finished:
                return status
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.002)


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
    sandbox.die_with_parent()
    sandbox.become_subreaper()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the pool decides when workers stop
    Worker(args.control_fd, args.events_fd).serve()


if __name__ == "__main__":
    main()
