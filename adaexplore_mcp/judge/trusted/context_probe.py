"""The timed process's own handoff, measured before it holds any user code.

Every call's time is its gated time less the handoff that a null subject shows next to it
(``trusted.timing``). But the GPU does not hand itself to every context alike: on an H200, new
contexts' null calls read from 1.7 µs less to 2.1 µs more than a resident context's, each
context by the same amount round after round (sd 0.3 µs), and a context made where another was
ended reads as that one did (``benchmarks/handoff_contexts.py``). The null subject lives as
long as its worker; the candidate's context is new every evaluation. So what the null's handoff
read unlike the candidate's stayed in every call: 1-4% between evaluations of the same kernel
on 0.07 ms kernels (``notes/trusted-judge-h200.md``).

So the trusted process times the process whose forward the job times (``wire.jobs.probed_role``)
before handing it the job: its context is made and nothing of the user's is loaded in it; it
serves null calls (``subject.null``) in turns with the null subject, in rounds, the job's other
user-code processes stopped and the GPU quiet, holding the GPU lock exclusively. The median
difference is the context's *offset*; every calibration of the job is read as if in that
context (``SpanResult.handoff_ms``). Measured once user code was loaded, the offset would be the
candidate's to make: null calls that did work would make every call look faster.

What a candidate can still do: move its work to a context it makes itself, whose handoff was
never measured. It gains at most the difference between two contexts (a few microseconds a
call), as it could before the offset existed.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

import torch

from adaexplore_mcp.judge.sandbox.limits import groups_stopped
from adaexplore_mcp.judge.settings import TimingSettings
from adaexplore_mcp.judge.trusted.gpu import Gpu
from adaexplore_mcp.judge.trusted.link import Link, SubjectLost
from adaexplore_mcp.judge.wire import cuda
from adaexplore_mcp.judge.wire.ipc import ALIGN
from adaexplore_mcp.judge.wire.subject import (
    ArmedAnswer,
    ArmRequest,
    Gate,
    OkAnswer,
    ReleaseRequest,
)

ARM_PATIENCE_S = 10.0  # judge code on both ends: it arms in milliseconds
SPAN_PATIENCE_S = 10.0


def context_offset(
    subject: Link, calibrator: Link, settings: TimingSettings, *, stopped: Sequence[int] = ()
) -> float:
    """``subject``'s context's handoff less ``calibrator``'s, in ms; 0 where the GPU did not
    settle or the rounds read more than ``settings.context_offset_limit_ms`` apart.
    ``stopped``: the process groups of the job's other user-code processes."""
    if settings.context_rounds == 0:
        return 0.0
    gpu = Gpu(settings)
    with groups_stopped(stopped):
        settled = gpu.hold.settle(
            quiet_ms=settings.settle_quiet_ms, limit_ms=settings.settle_limit_ms
        )
        if not settled.quiet:  # work of another process would be timed with the null calls
            return 0.0
        return offset_of(
            lambda link: null_span(link, gpu, settings.context_calls),
            subject,
            calibrator,
            rounds=settings.context_rounds,
            limit_ms=settings.context_offset_limit_ms,
        )


def offset_of(
    span: Callable[[Link], float],
    subject: Link,
    calibrator: Link,
    *,
    rounds: int,
    limit_ms: float,
) -> float:
    """The median over ``rounds`` of ``span(subject) - span(calibrator)``, the two timed in
    turns, each first in every other round (a drift of the GPU's cancels); 0 beyond
    ``limit_ms``."""
    differences = []
    for number in range(rounds):
        pair = (subject, calibrator) if number % 2 == 0 else (calibrator, subject)
        timed = {link.role: span(link) for link in pair}
        differences.append(timed[subject.role] - timed[calibrator.role])
    offset = statistics.median(differences)
    return offset if abs(offset) <= limit_ms else 0.0


def null_span(link: Link, gpu: Gpu, calls: int) -> float:
    """The median gated time of ``calls`` null calls of ``link``'s process, each behind a gate
    of its own and an L2 flush, as a span's calls are (``trusted.timing``), in ms. New words
    every span, as there: the handoff depends on where they lie."""
    arena = link.new_arena(ALIGN)
    arena.bytes[:8].zero_()
    torch.cuda.current_stream().synchronize()
    words = arena.pointer
    gate = Gate(ipc=arena.handle, gate_offset=0, done_offset=4)
    link.send(ArmRequest(variant="null", calls=[[] for _ in range(calls)], gate=gate, value=1))
    link.answer(expect=ArmedAnswer, timeout_s=ARM_PATIENCE_S)
    opened = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    ended = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    stream = gpu.stream.cuda_stream
    with torch.cuda.stream(gpu.stream):
        for index in range(calls):
            gpu.flush()
            opened[index].record()
            cuda.write_value(stream, words, index + 1)
            cuda.wait_value(stream, words + 4, index + 1)
            ended[index].record()
    deadline = time.monotonic() + SPAN_PATIENCE_S
    while not ended[-1].query():
        if time.monotonic() > deadline:
            with torch.cuda.stream(gpu.side):  # neither stream may wait forever
                cuda.set_word(gpu.side.cuda_stream, words, calls)
                cuda.set_word(gpu.side.cuda_stream, words + 4, calls)
            ended[-1].synchronize()
            raise SubjectLost(link.role, "did not run its null calls")
        time.sleep(0.0002)
    link.ask(ReleaseRequest(), expect=OkAnswer, timeout_s=ARM_PATIENCE_S)
    return statistics.median(a.elapsed_time(b) for a, b in zip(opened, ended, strict=True))
