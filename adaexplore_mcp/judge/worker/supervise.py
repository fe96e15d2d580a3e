"""Running one job: fork its processes, relay the trusted process's frames, drain the output of
the others, enforce the deadline, and clean up. Returns how the job ended (``ChildOutcome``)."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from adaexplore_mcp.judge.result import Phase, SandboxReport
from adaexplore_mcp.judge.sandbox import limits
from adaexplore_mcp.judge.wire.frames import FrameBuffer, write_frame
from adaexplore_mcp.judge.wire.jobs import (
    CancelMessage,
    ChildOutcome,
    JobMessage,
    PhaseMessage,
    ProcessExit,
    ReportMessage,
    ShutdownMessage,
    from_worker,
    to_worker,
)
from adaexplore_mcp.judge.worker import spares
from adaexplore_mcp.judge.worker.kept import kept_key
from adaexplore_mcp.judge.worker.processes import Forked, ForkPlan, Started, roles_for, template_of
from adaexplore_mcp.judge.worker.resident import Handed

if TYPE_CHECKING:
    from adaexplore_mcp.judge.worker.main import Worker

TAIL_CHARS = 4000
_DEBUG_LINGER_S = 1.0
_WATCH_S = 0.25
_REAP_LOOK_S = 0.05
_EXIT_WAIT_S = 2.0


class Shutdown(Exception):
    pass


class _Tail:
    """The end of what a process printed, and how much it printed."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > 4 * TAIL_CHARS:
            del self.data[: len(self.data) - TAIL_CHARS]

    def text(self) -> str | None:
        if not self.data:
            return None
        text = bytes(self.data[-TAIL_CHARS:]).decode("utf-8", errors="replace")
        return ("…" + text) if self.total > TAIL_CHARS else text


def supervise(message: JobMessage, worker: Worker) -> ChildOutcome:
    job = message.child
    plan = ForkPlan(
        job=template_of(job),
        timeout_s=message.timeout_s,
        fallback_root="",  # each set of processes gets its own (``Spares``)
        private_dirs=worker.private_dirs,
        env=limits.scrubbed_environment(worker.env, {}),
        roles=roles_for(job),
        triton_helpers=worker.triton_helpers(job.device),
    )
    # an evaluation's task process may be one kept from the last evaluation of this task, and
    # may be kept for the next (``worker.kept``); the spare set's is then set aside, unused,
    # for the next job of another task (``worker.spares``)
    next_plan = plan
    key = kept_key(plan, job)
    task = worker.kept_tasks.take(key)
    if task is not None:
        plan = plan.without("task")
    if not limits.kill_children(keep=worker.kept_pids()):
        worker.residents.reaped()  # the last jobs' processes are gone: their memory may go
    started = worker.spares.start(plan)
    if key is not None and task is None:
        task = started.detach("task")
    resident = worker.residents.for_job(job)
    handed = resident.hand(job, started, task)

    def prepare_next() -> None:
        if job.kind == "eval":
            worker.spares.fill(next_plan)

    outcome: ChildOutcome | None = None
    try:
        supervisor = _Supervisor(
            message, worker, started, handed, time.monotonic(), prepare_next, task
        )
        outcome = supervisor.run()
        return outcome
    finally:
        spares.end(started)
        for fd in (handed.report_r, handed.trusted.output_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        if outcome is None or outcome.end != "reported":
            worker.residents.retire()  # it may be stuck in the job, or damaged by it
        if task is not None:
            assert key is not None
            if _served_cleanly(outcome):
                worker.kept_tasks.keep(key, task)
            else:
                worker.kept_tasks.release(task)
        limits.kill_children(keep=worker.kept_pids())
        prepare_next()


def _served_cleanly(outcome: ChildOutcome | None) -> bool:
    """An evaluation that ended in a report that is not the task's failure, its task's process
    still there: it may serve the next."""
    if outcome is None or outcome.end != "reported" or outcome.task_exit is not None:
        return False
    return (outcome.report or {}).get("kind") == "eval"


class _Supervisor:
    def __init__(
        self,
        message: JobMessage,
        worker: Worker,
        forked: Started,
        handed: Handed,
        started: float,
        prepare_next: Callable[[], None],
        task: Forked | None = None,
    ) -> None:
        self.message, self.worker = message, worker
        self.processes = [handed.trusted, *forked.processes, *([task] if task else [])]
        self.kept_task = task
        # without a private filesystem view the working directory is a directory of the host,
        # which no tmpfs bounds: its size is watched instead
        root = forked.plan.fallback_root
        self.fallback_workdir = os.path.join(root, "candidate", "work")
        self.report_r, self.started = handed.report_r, started
        self.prepare_next = prepare_next
        self.deadline = started + message.timeout_s
        self.tails = {p.role: _Tail() for p in self.processes}
        self.limit = message.child.output_limit_bytes
        self.flooded = False
        self.sandbox: SandboxReport | None = None
        self.last_phase = Phase.COMPILING
        self.task_running = False
        self.relayed_any = False
        self.startup_s = 0.0
        self.report: dict | None = None
        self.earlier_reaped = False

    def run(self) -> ChildOutcome:
        end = self._loop()
        debugging = any(os.environ.get(name) for name in limits.DEBUG_VARIABLES)
        if debugging and end == "reported":
            time.sleep(_DEBUG_LINGER_S)  # what the processes print once the report is out
        by_role = {p.role: p for p in self.processes}
        trusted = by_role["trusted"]
        if end != "reported":
            # before the drain: a trusted process that crashed prints its traceback on its way
            # out, after its report's pipe closed
            _reap_trusted(trusted, end)
        self._drain()
        if self.sandbox is not None and not self.sandbox.private_filesystem:
            self._watch_workdir()  # what it wrote since the last look
        if debugging:
            for role, tail in self.tails.items():
                sys.stderr.write(f"--- {role} ({end}) ---\n{tail.text() or ''}\n")
            sys.stderr.flush()
        elapsed = time.monotonic() - self.started
        if end == "reported":
            # a user-code process that died before the report: its exit, for the message
            for process in self.processes:
                if process.role in ("candidate", "task"):
                    _reap(process, wait_s=_EXIT_WAIT_S if self._lost(process.role) else 0.0)
        return ChildOutcome(
            end=end,  # type: ignore[arg-type]
            report=self.report if end == "reported" else None,
            last_phase=self.last_phase,
            task_running=self.task_running and end == "timeout",
            exit_code=_exit(trusted).exit_code if trusted.status is not None else None,
            signal=_exit(trusted).signal if trusted.status is not None else None,
            elapsed_s=elapsed,
            startup_s=self.startup_s,
            output_tail=self.tails["candidate"].text() if "candidate" in self.tails else None,
            task_output_tail=self.tails["task"].text() if "task" in self.tails else None,
            judge_output_tail=None if end == "reported" else self.tails["trusted"].text(),
            candidate_exit=_exit(by_role["candidate"])
            if "candidate" in by_role and by_role["candidate"].status is not None
            else None,
            task_exit=_exit(by_role["task"])
            if "task" in by_role and by_role["task"].status is not None
            else None,
            output_limit_hit=self.flooded,
            sandbox=self.sandbox,
        )

    def _drain(self) -> None:
        """What the processes printed before the job ended and is still in their pipes."""
        for process in self.processes:
            os.set_blocking(process.output_fd, False)
            with contextlib.suppress(OSError):
                while chunk := os.read(process.output_fd, 1 << 16):
                    self._output(process, chunk)

    def _lost(self, role: str) -> bool:
        error = ((self.report or {}).get("body") or {}).get("error") or {}
        if role == "candidate":
            return bool(error.get("type") == "Crash")
        if self.kept_task is not None:  # it lives on unless the task failed
            return (self.report or {}).get("kind") == "task_error"
        return True

    def _loop(self) -> str:
        selector = selectors.DefaultSelector()
        selector.register(self.report_r, selectors.EVENT_READ, ("report", None))
        selector.register(self.worker.control_fd, selectors.EVENT_READ, ("control", None))
        for process in self.processes:
            selector.register(process.output_fd, selectors.EVENT_READ, ("output", process))
            if process.setup_fd is not None:
                selector.register(process.setup_fd, selectors.EVENT_READ, ("setup", process))
        frames, control = FrameBuffer(), FrameBuffer()
        try:
            while True:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    return "timeout"
                watching = self.sandbox is not None and not self.sandbox.private_filesystem
                if watching:
                    self._watch_workdir()
                    remaining = min(remaining, _WATCH_S)
                if not self.earlier_reaped:
                    self.earlier_reaped = self._earlier_jobs_gone()
                    if not self.earlier_reaped:
                        remaining = min(remaining, _REAP_LOOK_S)
                for key, _ in selector.select(timeout=remaining):
                    what, process = key.data
                    chunk = os.read(key.fd, 1 << 16)
                    if what == "report":
                        if not chunk:
                            return "crashed"
                        for body, _ in frames.feed(chunk):
                            if self._relay(body):
                                return "reported"
                    elif what == "control":
                        if not chunk:
                            raise Shutdown
                        for body, _ in control.feed(chunk):
                            message = to_worker.validate_json(body)
                            if isinstance(message, ShutdownMessage):
                                raise Shutdown
                            if isinstance(message, CancelMessage) and message.id == self.message.id:
                                return "cancelled"
                    elif not chunk:
                        selector.unregister(key.fd)
                    elif what == "setup":
                        self._setup(chunk)
                    else:
                        self._output(process, chunk)
        finally:
            selector.close()

    def _earlier_jobs_gone(self) -> bool:
        """Whether every process of the jobs before this one is gone (they were killed as their
        jobs ended, and are reaped here): the resident may then free what those jobs shared,
        once this job is done. Looked at while the job runs, so that memory is given back
        under a steady stream of jobs too."""
        keep = self.worker.kept_pids() | {process.pid for process in self.processes}
        limits.reap_children(keep)
        if limits.children_but(keep):
            return False
        self.worker.residents.reaped(before_current=True)
        return True

    def _relay(self, body: bytes) -> bool:
        message = from_worker.validate_json(body)
        if isinstance(message, PhaseMessage):
            self.task_running = message.task_running
            if self.relayed_any and message.phase == self.last_phase:
                return False  # the same phase: only whether the task's own code runs changed
            now = time.monotonic() - self.started
            if not self.startup_s:
                self.startup_s = now
            if message.phase != Phase.COMPILING:
                self.prepare_next()  # this job's processes are up: the next job's may start
            self.last_phase, self.relayed_any = message.phase, True
            relayed = PhaseMessage(id=self.message.id, phase=message.phase, elapsed_s=now)
            write_frame(self.worker.events_fd, relayed)
            return False
        if isinstance(message, ReportMessage):
            self.report = message.report
            return True
        return False

    def _setup(self, chunk: bytes) -> None:
        with contextlib.suppress(ValueError):
            report = SandboxReport.model_validate_json(chunk)
            if self.sandbox is None:
                self.sandbox = report

    def _watch_workdir(self) -> None:
        if self.flooded:
            return
        total = 0
        for folder, _, files in os.walk(self.fallback_workdir):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(folder, name)).st_size
        if total > self.limit:
            self.flooded = True
            candidate = next(p for p in self.processes if p.role == "candidate")
            limits.kill_group(candidate.pid)

    def _output(self, process: Forked, chunk: bytes) -> None:
        tail = self.tails[process.role]
        tail.feed(chunk)
        if process.role == "candidate" and tail.total > self.limit and not self.flooded:
            self.flooded = True  # the trusted process sees the candidate's process end
            limits.kill_group(process.pid)


def _reap_trusted(trusted: Forked, end: str) -> None:
    """The trusted process of a job that ended without its report. Crashed (its report's pipe
    closed), it is on its way out: how it ends is the only clue the caller gets, and taken at
    once it was not there yet ("crashed (signal None, exit code None)")."""
    _reap(trusted, wait_s=_EXIT_WAIT_S if end == "crashed" else 0.0)


def _reap(process: Forked, *, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while process.status is None:
        pid, status = os.waitpid(process.pid, os.WNOHANG)
        if pid:
            process.status = status
            return
        if time.monotonic() >= deadline:
            return
        time.sleep(0.005)


def _exit(process: Forked) -> ProcessExit:
    status = process.status
    if status is None:
        return ProcessExit()
    if os.WIFSIGNALED(status):
        return ProcessExit(signal=signal.Signals(os.WTERMSIG(status)).name)
    return ProcessExit(exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None)
