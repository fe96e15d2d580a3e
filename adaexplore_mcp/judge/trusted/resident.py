"""The trusted process as a worker keeps it: one process that runs job after job.

Making a CUDA context costs a process 0.2-0.3 s on an H200 and stalls the GPU for every other
process meanwhile; a trusted process and a null subject made per job were half of the contexts
an evaluation made. Neither runs user code, so both now live as long as their worker lets them
(``worker.resident``), and only the user-code processes are made per job.

What the worker sends, on a socket of its own (``wire.jobs.ResidentOrder``):
- ``job``: a job's pipes and the trusted ends of its user-code processes' sockets, passed as
  descriptors; the job itself follows on its own pipe, as the per-job trusted process read it;
- ``reaped``: every process of the jobs up to then is gone. Only then may those jobs' arenas be
  freed (``trusted.giveback``: once the GPU lock is free): a process that mapped an arena (or a
  kernel it left running) could write into it, and a freed allocation is the next one made.
  Until then they are kept, so no job of this process reuses memory that a process of an earlier
  job could still reach. A task process the worker keeps for later jobs (``task_kept``) is never
  reaped while it serves: what was shared with it is kept as long as this process.

Between jobs this process holds no user-code socket, no lock and no report pipe, and what it
prints goes nowhere.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import socket
import sys
import traceback
from collections.abc import Iterator

import torch

from adaexplore_mcp.judge.settings import TimingSettings
from adaexplore_mcp.judge.trusted import null_panel
from adaexplore_mcp.judge.trusted.diagnostics import profiled
from adaexplore_mcp.judge.trusted.giveback import IDLE_S, Giveback
from adaexplore_mcp.judge.trusted.gpu import Gpu
from adaexplore_mcp.judge.trusted.gpulock import GpuLock
from adaexplore_mcp.judge.trusted.link import Link, Role, SubjectFailed, SubjectLost
from adaexplore_mcp.judge.trusted.main import run
from adaexplore_mcp.judge.trusted.peaks import PeakFlops
from adaexplore_mcp.judge.trusted.report import Reporter
from adaexplore_mcp.judge.trusted.span_result import NullOffset
from adaexplore_mcp.judge.trusted.timing import SubjectStuck
from adaexplore_mcp.judge.wire.cuda import CudaError
from adaexplore_mcp.judge.wire.frames import Channel, ChannelClosed, FrameError, read_frame
from adaexplore_mcp.judge.wire.ipc import Arena, LentArena
from adaexplore_mcp.judge.wire.jobs import (
    ChildJob,
    HandedJob,
    ResidentOrder,
    prepared_adapter,
    resident_order_adapter,
)
from adaexplore_mcp.judge.wire.subject import ReadyAnswer, answer_adapter

PREPARE_PATIENCE_S = 120.0
ANSWER_LIMIT = "ADAEXPLORE_JUDGE__SANDBOX__ANSWER_LIMIT_MB"  # the setting, for its error
CALIBRATOR_PATIENCE_S = 10.0
PANEL_PATIENCE_S = 60.0  # a context waits for the GPU lock (shared) while another worker times
ORDER_BYTES = 4096
MAX_FDS = 8
# owed beyond this, memory is given back at once, waiting for the GPU lock: four workers keep
# at most an eighth of the GPU's memory cached for their next jobs
KEPT_FRACTION = 1 / 32


class Resident:
    def __init__(
        self,
        control: socket.socket,
        calibrator: Channel | None,
        device: torch.device,
        gpu_lock: str | None = None,
        *,
        panel: list[Channel] | None = None,
        timing: TimingSettings | None = None,
        kept_bytes: int | None = None,
    ) -> None:
        """``panel``: processes running the null subject's code, to time once against it
        (``trusted.null_panel``), with ``timing``'s rounds. ``kept_bytes``: memory a job may
        leave owed while the GPU lock is busy (``trusted.giveback``); by default
        ``KEPT_FRACTION`` of the GPU's."""
        self.control = control
        self.device = device
        lock = GpuLock(gpu_lock) if gpu_lock else None
        self.exclusive = lock.exclusive if lock else contextlib.nullcontext
        # giving memory back unmaps pages of the GPU: kept out of other evaluations' timings
        self.giveback = Giveback(
            lock,
            limit_bytes=_kept_bytes(device) if kept_bytes is None else kept_bytes,
            cached_bytes=lambda: _cached_bytes(device),
            empty_cache=lambda: _empty_cache(device),
        )
        self.calibrator = calibrator
        self.panel = panel or []
        self.timing = timing or TimingSettings()
        self.null_offset: NullOffset | None = None
        self.calibrator_ready: ReadyAnswer | None = None  # read once the job before ended
        self.unfreed: dict[int, list[Arena | LentArena]] = {}
        # shared with a task process the worker keeps (``worker.kept``): never freed here (an
        # evaluation shares none with its task's process; this is the rule should one ever)
        self.kept_for_life: list[Arena | LentArena] = []
        # measured on the first timing that needs one, then kept for every later job
        self.peaks = PeakFlops(device) if device.type == "cuda" else None

    def serve(self) -> None:
        """Jobs until the worker closes its socket (it retires this process after a number of
        jobs, or after a job that did not end in a report)."""
        if self.calibrator is not None:
            self.calibrator_ready = self._calibrator_answer()
            if self.panel:
                self._time_panel()
        while True:
            if self.giveback.owed and not _readable(self.control, IDLE_S):
                self.giveback.settle(wait=True)
            received = self._order()
            if received is None:
                return
            order, fds = received
            if order.kind == "reaped":
                self.giveback.owe(self._reaped_up_to(order.seq))
                self.giveback.settle()
                continue
            self._job(order, fds)
            if self.calibrator is not None:
                self.calibrator_ready = self._calibrator_answer()
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)  # a context that failed ends this process
                # what the job allocated goes back to the GPU, not into this process's cache:
                # four workers' caches, each as large as its largest job, filled an H200
                self.giveback.owe(cache=True)
                self.giveback.settle()

    def _order(self) -> tuple[ResidentOrder, list[int]] | None:
        data, fds, _, _ = socket.recv_fds(self.control, ORDER_BYTES, MAX_FDS)
        if not data:
            return None
        return resident_order_adapter.validate_json(data), fds

    def _job(self, order: ResidentOrder, fds: list[int]) -> None:
        job_r, report_w, out_w, *sockets = fds
        channels: dict[Role, Channel] = {
            role: Channel(socket.socket(fileno=fd))
            for role, fd in zip(order.roles, sockets, strict=True)
        }
        try:
            with printing_into(out_w):
                self._run(order, job_r, report_w, channels)
        finally:
            for channel in channels.values():
                channel.close()
            for fd in (job_r, report_w):
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _run(
        self, order: ResidentOrder, job_r: int, report_w: int, channels: dict[Role, Channel]
    ) -> None:
        frame = read_frame(job_r)
        if frame is None:
            return  # the worker gave the job up
        job = ChildJob.model_validate_json(frame[0])
        for channel in channels.values():
            # what a user-code process sends is held here, up to twice over as it is copied out
            channel.max_payload = job.sandbox.answer_limit_mb * 2**20
            channel.limit_name = ANSWER_LIMIT
            with contextlib.suppress(ChannelClosed, FrameError):  # found lost in the job
                channel.receive(prepared_adapter, timeout_s=PREPARE_PATIENCE_S)
        for role, channel in channels.items():
            with contextlib.suppress(ChannelClosed):  # a process that is gone: found so
                channel.send(HandedJob(job=_part_for(role, job)))
        links = self._links(job, channels, order)
        try:
            with profiled(os.environ, "trusted"):
                run(job, Reporter(report_w), links, self.peaks)
        finally:
            arenas: list[Arena | LentArena] = []
            for role, link in links.items():
                link.unmap()
                if role == "task" and order.task_kept:
                    # the process lives on and may still map them: kept as long as this one
                    self.kept_for_life += link.arenas()
                else:
                    arenas += link.arenas()
            self.unfreed[order.seq] = arenas

    def _links(self, job: ChildJob, channels: dict[Role, Channel], order: ResidentOrder):
        own: set[str] = set()  # the arenas of this job, which no process may send back
        links = {
            role: Link(role, channel, self.device, own, group=order.groups.get(role))
            for role, channel in channels.items()
        }
        if order.calibrated and self.calibrator is not None:
            links["calibrator"] = Link(
                "calibrator",
                self.calibrator,
                self.device,
                own,
                ready=self.calibrator_ready,
                null_offset=self.null_offset,
            )
            self.calibrator_ready = None
        return links

    def _time_panel(self) -> None:
        """The null subject's offset from new contexts, timed against the panel; the panel
        then quits. A member that fails leaves the offset unmeasured (reported as such), and
        its words allocated for good: it may still map them."""
        assert self.calibrator is not None
        own: set[str] = set()
        null = Link("calibrator", self.calibrator, self.device, own, ready=self.calibrator_ready)
        members = [Link("calibrator", channel, self.device, own) for channel in self.panel]
        started: list[Link] = []  # those that answered ready: each answers a quit again
        try:
            for member in members:
                member.ready(timeout_s=PANEL_PATIENCE_S)
                started.append(member)
            with self.exclusive():
                gpu = Gpu(self.timing)
                self.null_offset = null_panel.measure(
                    null, members, gpu, rounds=self.timing.null_panel_rounds
                )
        except (SubjectLost, SubjectFailed, SubjectStuck, CudaError, torch.OutOfMemoryError):
            traceback.print_exc()
        let_go = []
        for member in members:
            if member in started:
                member.quit()
                with contextlib.suppress(SubjectLost):
                    member.ready(timeout_s=CALIBRATOR_PATIENCE_S)  # it unmapped its words
                    let_go += member.arenas()
            member.channel.close()  # it ends once it reads that
        null.quit()
        self.calibrator_ready = self._calibrator_answer()
        let_go += null.arenas()
        self.giveback.owe(let_go, cache=True)
        self.giveback.settle(wait=True)
        self.panel = []

    def _calibrator_answer(self) -> ReadyAnswer:
        """The null subject's ready answer: it comes once the subject has let go of the last
        job's arenas. A subject that does not answer, or answers anything else, ends this
        process (the worker starts another pair)."""
        assert self.calibrator is not None
        answer, _ = self.calibrator.receive(answer_adapter, timeout_s=CALIBRATOR_PATIENCE_S)
        if not isinstance(answer, ReadyAnswer):
            raise FrameError(f"the null subject answered {answer.kind!r} between jobs")
        return answer

    def _reaped_up_to(self, seq: int) -> list[Arena | LentArena]:
        """The arenas of the jobs up to ``seq``, whose processes are all gone."""
        return [
            arena
            for done in sorted(s for s in self.unfreed if s <= seq)
            for arena in self.unfreed.pop(done)
        ]


def _readable(sock: socket.socket, timeout_s: float) -> bool:
    return bool(select.select([sock], [], [], timeout_s)[0])


def _kept_bytes(device: torch.device) -> int:
    if device.type != "cuda":
        return 0
    return int(torch.cuda.get_device_properties(device).total_memory * KEPT_FRACTION)


def _cached_bytes(device: torch.device) -> int:
    if device.type != "cuda":
        return 0
    return torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)


def _empty_cache(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _part_for(role: str, job: ChildJob) -> ChildJob:
    """The candidate's process is not given the task, nor the task's the candidate's code."""
    if role == "candidate":
        return job.model_copy(update={"task": None})
    return job.model_copy(update={"code": None})


@contextlib.contextmanager
def printing_into(fd: int) -> Iterator[None]:
    """Standard output and error into a job's output pipe for the block, then nowhere. An error
    that ends this process is printed while the pipe is still there: printed on the process's way
    out, it went nowhere, and the job's error said only "crashed (signal None, exit code 70)"."""
    _print_into(fd)
    try:
        yield
    except BaseException:
        traceback.print_exc()
        raise
    finally:
        _print_into(None)


def _print_into(fd: int | None) -> None:
    """Standard output and error into a job's output pipe, or nowhere between jobs."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    target = fd if fd is not None else os.open(os.devnull, os.O_WRONLY)
    os.dup2(target, 1)
    os.dup2(target, 2)
    os.close(target)


def serve(
    control: socket.socket,
    calibrator: Channel | None,
    device: torch.device,
    gpu_lock: str | None,
    *,
    panel: list[Channel] | None = None,
    timing: TimingSettings | None = None,
) -> None:
    """The resident's life, once its CUDA context is made."""
    try:
        Resident(control, calibrator, device, gpu_lock, panel=panel, timing=timing).serve()
    except (ChannelClosed, FrameError):
        traceback.print_exc()
