"""Where the null subject's handoff lies among new contexts': measured once, when a worker's
trusted process starts.

Every gated call is charged its gated time less the handoff the worker's null subject shows
next to it (``trusted.timing``), so a null subject whose handoff reads low makes every
candidate it calibrates read high. On an H200 (2026-11-29, ``notes/trusted-judge-h200.md``),
with four workers taking quiet evaluations in turn, each worker's null subject read a handoff
of its own, steady job after job (within about 0.3 µs), and up to 2 µs from another worker's
(287.2 to 289.1 µs), while the candidates' gated times, their contexts new every evaluation,
did not depend on the worker: the medians of softmax and rmsnorm moved with the worker, by 2.3
and 2.8% over ten evaluations each.

So the worker starts, with its null subject, a *panel* of trusted processes that run the null
subject's own code, each a new context as a candidate's is. The trusted process times the null
subject and the panel in rounds, each in a new order, every span on new words (the handoff also
depends on where the polled words lie: ``benchmarks/handoff_contexts.py``). Each member's median
difference from the null subject is where that context reads against it; the median over the
panel is the null subject's offset, added to its handoff in every calibration of that trusted
process. The panel then quits. Nothing here runs user code, and nothing a candidate does can
reach it: the panel is gone before the first job is read.

New contexts scatter around each other by 0.5-1.1 µs (sd of twelve members' offsets, one panel
per worker), so the panel must be large: with four members the corrected handoffs of four
workers still lay 2.1-2.4 µs apart (the members' median was as much noise as signal); with
twelve, 0.7-0.8 µs; with eight (the default), 0.7-1.0 µs. What is left of the spread between
evaluations is the candidate's own context, which only its own process could show."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Sequence

import torch

from adaexplore_mcp.judge.trusted.gpu import Gpu
from adaexplore_mcp.judge.trusted.link import Link
from adaexplore_mcp.judge.trusted.span_result import NullOffset
from adaexplore_mcp.judge.trusted.timing import gate_words, wait_or_unblock
from adaexplore_mcp.judge.wire import cuda
from adaexplore_mcp.judge.wire.subject import ArmedAnswer, ArmRequest, OkAnswer, ReleaseRequest

ARM_PATIENCE_S = 10.0


def offset_from(null: Sequence[float], members: Sequence[Sequence[float]]) -> NullOffset:
    """The null subject's offset from its spans (``null``) and each member's, round by round:
    differences are taken within a round, so what moves every context alike cancels."""
    if not members:
        raise ValueError("a panel of no members measures nothing")
    offsets = tuple(
        statistics.median(mine - ours for mine, ours in zip(member, null, strict=True))
        for member in members
    )
    return NullOffset(ms=statistics.median(offsets), members_ms=offsets)


def measure(
    null: Link, panel: Sequence[Link], gpu: Gpu, *, rounds: int, calls: int = 10
) -> NullOffset:
    """Time ``null`` and every member of ``panel`` in ``rounds`` rounds of one span of ``calls``
    null calls each, after one unrecorded span each (every path warm)."""
    subjects = [null, *panel]
    for subject in subjects:
        _span(subject, gpu, calls)
    readings: list[list[float]] = [[] for _ in subjects]
    order = list(range(len(subjects)))
    shuffle = random.Random().shuffle
    for _ in range(rounds):
        shuffle(order)
        for index in order:
            readings[index].append(_span(subjects[index], gpu, calls))
    return offset_from(readings[0], readings[1:])


def _span(link: Link, gpu: Gpu, calls: int) -> float:
    """The median gated time of ``calls`` null calls of ``link``, each behind a gate of its own
    and after an L2 flush, as the calibration's, on words allocated for this span."""
    gate, words = gate_words(link)
    link.send(ArmRequest(variant="null", calls=[[] for _ in range(calls)], gate=gate, value=1))
    link.answer(expect=ArmedAnswer, timeout_s=ARM_PATIENCE_S)
    opened = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    ended = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    with torch.cuda.stream(gpu.stream):
        for index, number in enumerate(range(1, calls + 1)):
            gpu.flush()
            opened[index].record()
            cuda.write_value(gpu.stream.cuda_stream, words, number)
            cuda.wait_value(gpu.stream.cuda_stream, words + 4, number)
            ended[index].record()
    wait_or_unblock(gpu, ended[-1], words + 4, calls, deadline=time.monotonic() + ARM_PATIENCE_S)
    link.ask(ReleaseRequest(), expect=OkAnswer)
    return statistics.median(a.elapsed_time(b) for a, b in zip(opened, ended, strict=True))
