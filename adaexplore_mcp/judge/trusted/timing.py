"""The clock: timing another process's forward from the trusted process's own stream.

One *span* times ``K`` calls of forward, each behind a gate of its own. The subject (the
candidate's or the task's process) enqueues, for every call, a wait on the gate (a 32-bit word
in this process's memory) reaching the call's number, the call, and a write of that number to a
done word; it answers once it has. This process then enqueues on its own stream, for every
call: an event; a copy of the call's fresh input set into the buffers it reads (with a kernel,
so the subject cannot see it before then); an L2 flush; the *opened* event; the gate's opening;
a wait on the done word; the *ended* event. The next call's copy begins with an L2 flush and a
copy of this call's outputs, timed with it (the calibration copies as much); the last call's
outputs are copied in a timed window of their own. So the subject's host (and any load on this
machine) is outside the span, a call's inputs did not exist before its gate closed on the
previous call (no call can work out the next one's result early), no call's outputs are read
after the next gate opens (no call can leave its work to the next one's launch), and every call
starts on an L2 just flushed (the regime of ``triton.testing.do_bench``). A subject that
answers only once its gates are open (its forward waits on the GPU) names its outputs too late
for that: its spans have one call each (``trusted.spans``).

Handing the GPU from one process's context to another's costs a stable fraction of a
millisecond (``notes/cross-process-timing-h100.md``). A *calibration span* with a trusted null
subject (``trusted.calibrator``), the same copies and flushes and one tiny kernel a call,
measures that handoff next to every span. The GPU time-slices between contexts, so work the
subject left running would make every calibration call a time slice longer, all of it taken off
the subject's calls (a softmax judged to take no time on an H100). So from the span's end to
the calibration's, every user-code process of the job is stopped by the operating system
(``sandbox.limits.groups_stopped``: a stopped process launches nothing, and none can leave its
group), and the calibration starts only once the GPU has been quiet for longer than a time
slice (``Hold.settle``); work that outlives ``timing.settle_limit_ms`` fails the kernel. A
call's time is its gated time (opened to ended) less the handoff, never below zero: a call that
runs no kernel behind its gate hands the GPU back in a few microseconds, and would otherwise
take a handoff off its neighbours' time.

The clock that counts runs from each gate's opening to its done word: copying gigabytes of
inputs takes longer than the calls themselves on some tasks, and its jitter would otherwise
land in every call. The copies are still timed, in the span and in the calibration: whatever
the span's copies took beyond the calibration's is GPU time the subject's context held while
its gates were closed, and what exceeds an allowance is charged to the calls.

Before the first copy there is a wait: the subject's host enqueues its calls after it is asked
to, while the GPU would sit idle, free for work the subject launches on a stream the gate does
not hold. The trusted process keeps the GPU busy through that wait with a *hold*
(``trusted.hold``) that measures the GPU time other contexts take from it; beyond the
calibration's, that time is charged like the copy excess.

The allowance exists because an honest subject's copy excess is not zero: on an H200 it was
0.001-0.048 ms a span (median per evaluation, bundled solutions), whatever the span's size,
while the calibration's own copy varies little. Charging all of it added 1-4% to every median
and most of the spread between evaluations; charging what exceeds the allowance keeps the check
on work hidden before the gate (``timing.fill_allowance_ms`` a span, at most, goes uncounted)."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from adaexplore_mcp.judge.sandbox.limits import groups_stopped
from adaexplore_mcp.judge.settings import TimingSettings
from adaexplore_mcp.judge.trusted.gate_groups import gate_groups
from adaexplore_mcp.judge.trusted.gpu import Gpu
from adaexplore_mcp.judge.trusted.landing import Landing
from adaexplore_mcp.judge.trusted.link import Link, SubjectLost
from adaexplore_mcp.judge.trusted.span_result import Handoff, SpanResult
from adaexplore_mcp.judge.trusted.staging import SpanInputs
from adaexplore_mcp.judge.wire import cuda
from adaexplore_mcp.judge.wire.ipc import ALIGN, copied
from adaexplore_mcp.judge.wire.subject import (
    ArmedAnswer,
    ArmRequest,
    CallAnswer,
    CallRequest,
    Gate,
    OkAnswer,
    ReleaseRequest,
)

SPAN_DEADLINE_S = 60.0


class SubjectStuck(Exception):
    """The subject armed its calls but never reported them done."""


class SubjectBusy(Exception):
    """Work of the subject's context kept the GPU busy after its span, its processes stopped."""

    def __init__(self, limit_ms: float) -> None:
        super().__init__(f"the GPU stayed busy for {limit_ms:g} ms after the span")
        self.limit_ms = limit_ms


def gate_words(link: Link) -> tuple[Gate, int]:
    """A gate and a done word, both zero, in an allocation of their own shared with ``link``'s
    process; and their address here."""
    arena = link.new_arena(ALIGN)
    arena.bytes[:8].zero_()
    torch.cuda.current_stream().synchronize()  # zero before the subject's stream waits on it
    return Gate(ipc=arena.handle, gate_offset=0, done_offset=4), arena.pointer


def wait_or_unblock(
    gpu: Gpu, event: torch.cuda.Event, done_word: int, value: int, *, deadline: float
) -> None:
    """Wait until the stream has passed ``event``; past ``deadline`` (``time.monotonic``),
    write ``value`` to the done word the stream waits on, so that it does not wait for ever,
    and raise ``SubjectStuck``."""
    while not event.query():
        if time.monotonic() > deadline:
            with torch.cuda.stream(gpu.side):
                cuda.set_word(gpu.side.cuda_stream, done_word, value)
            raise SubjectStuck
        time.sleep(0.0002)


@dataclass
class _Marks:
    """A span's events on this process's stream: per gate, before its calls' copy
    (``filling``), at its opening (``opened``) and once its last call's done word came
    (``ended``); around the copy of the last calls' outputs (``tail``)."""

    gates: int  # one a call unless calls share one (``trusted.gate_groups``)
    filling: list[torch.cuda.Event] = field(init=False)
    opened: list[torch.cuda.Event] = field(init=False)
    ended: list[torch.cuda.Event] = field(init=False)
    tail: list[torch.cuda.Event] = field(init=False)

    def __post_init__(self) -> None:
        def events(count: int) -> list[torch.cuda.Event]:
            return [torch.cuda.Event(enable_timing=True) for _ in range(count)]

        self.filling, self.opened, self.ended = (
            events(self.gates),
            events(self.gates),
            events(self.gates),
        )
        self.tail = events(2)

    def gated_ms(self) -> list[float]:
        return [a.elapsed_time(b) for a, b in zip(self.opened, self.ended, strict=True)]

    def fill_ms(self) -> float:
        fills = sum(a.elapsed_time(b) for a, b in zip(self.filling, self.opened, strict=True))
        return fills + (self.tail[0].elapsed_time(self.tail[1]) if self.gates else 0.0)


class SpanTimer:
    def __init__(
        self,
        *,
        subject: Link,
        calibrator: Link,
        gpu: Gpu,
        settings: TimingSettings,
        variant: str,
        compiled: bool = False,
        others: Sequence[Link] = (),
    ) -> None:
        """``others``: the job's other user-code processes, stopped with the subject's while
        the null subject is timed."""
        if subject.group is None:
            raise ValueError(
                f"the {subject.role}'s process group is not known: it cannot be stopped"
            )
        self.subject, self.calibrator, self.gpu = subject, calibrator, gpu
        self.groups = [link.group for link in (subject, *others) if link.group is not None]
        self.settings, self.variant, self.compiled = settings, variant, compiled
        self.value = 0
        self.synchronizing = False
        self.inputs = SpanInputs(subject, calibrator, gpu.device)
        self._landing = Landing()

    # -- one span ------------------------------------------------------------------------------

    def span(self, sets: list[list[Any]]) -> SpanResult:
        """Time one call of forward per input set (each set used once, never seen before)."""
        calls, payload, ranges = self.inputs.stage(sets)
        # Words of their own for every span: the handoff depends on where its words lie, and
        # an evaluation whose null subject's words were quick (0.2849 against ~0.2865 ms on an
        # H100) read ~1.5% slow on every call; new words each span average that out
        gate, words = gate_words(self.subject)
        first = self.value + 1
        self.value += len(calls)
        request = ArmRequest(
            variant=self.variant,
            calls=calls,
            gate=gate,
            value=first,
            compiled=self.compiled,
        )
        taken = torch.cuda.Event()
        self._landing.reserve(len(calls), self.gpu.device)  # nothing allocates in the hold
        with self.gpu.hold.held():  # the GPU stays ours until the span is enqueued behind it
            started = time.perf_counter()
            self.subject.send(request, payload)
            # once a forward has shown it waits on the GPU, the gates open without waiting long
            armed = self._armed(self.subject, patience_s=0.05 if self.synchronizing else None)
            host_s = time.perf_counter() - started
            # the outputs checked and mapped now: nothing may wait in the span
            views = self._views(armed, len(calls)) if armed is not None else None
            placed = self._landing.place(views) if views is not None else None
            groups = gate_groups(len(calls), self.settings.calls_per_gate, placed)
            marks = _Marks(len(groups))
            self.gpu.stream.wait_stream(torch.cuda.current_stream())  # the staged inputs
            with torch.cuda.stream(self.gpu.stream):
                self._enqueue(marks, ranges, groups, words, first, placed)
        with torch.cuda.stream(self.gpu.stream):
            synchronizing = armed is None
            if armed is None:  # forward waits on the GPU: its answer comes once a gate is open
                armed = self._armed(self.subject, patience_s=SPAN_DEADLINE_S)
                if armed is None:
                    raise SubjectLost(self.subject.role, "did not arm its timed calls")
                host_s = time.perf_counter() - started
                views = self._views(armed, len(calls))
            if placed is not None:
                outputs = [self._landing.tensors(landed) for landed in placed]
            else:  # copied only now, after the span's last call
                outputs = [copied(values) for values in views or []]
            taken.record()
        self._wait(taken, words + 4)
        held_ms = self.gpu.hold.stolen_ms()
        with self._stopped():  # no process of the job launches anything meanwhile
            settled_ms = self._settle()
            modified = self.inputs.modified(ranges[-1][1] if ranges else 0)
            handoff = self._handoff(ranges, groups, first, placed)  # before the subject lets go
        self.subject.ask(ReleaseRequest(), expect=OkAnswer)
        self.synchronizing |= synchronizing
        return SpanResult(
            gated_ms=marks.gated_ms(),
            fill_ms=marks.fill_ms(),
            handoff=handoff,
            host_s=host_s,
            outputs=outputs,
            synchronizing=synchronizing,
            outputs_late=placed is None,
            signals=armed[0].signals,
            inputs_modified=modified,
            held_ms=held_ms,
            fill_allowance_ms=self.settings.fill_allowance_ms,
            settled_ms=settled_ms,
            calls_per_gate=len(groups[0]) if groups else 1,
        )

    def warm(self, sets: list[list[Any]]) -> None:
        """Ungated calls before the first span, so that no kernel is loaded lazily behind a
        closed gate (a module load waits for the stream the gate holds)."""
        for values in sets:
            specs, payload, _ = self.subject.offer(values)
            self.subject.ask(
                CallRequest(variant=self.variant, args=specs, compiled=self.compiled),
                payload,
                expect=CallAnswer,
            )

    def _enqueue(
        self,
        marks: _Marks,
        ranges: list[tuple[int, int]],
        groups: list[range],
        words: int,
        first: int,
        placed: list[list[Any]] | None = None,
        *,
        calibrating: bool = False,
    ) -> None:
        """A span on this process's stream, gate by gate (a call each, or the calls of a
        group: ``trusted.gate_groups``): the calls' inputs go in and L2 is flushed (timed from
        ``filling`` to ``opened``), the gate opens to its last call's number, and its clock
        stops once the subject has written that number to its done word; the calls' outputs
        (``placed``, when known) are copied at the start of the next gate's copy window. The
        next gate's inputs do not exist before then, and no call's outputs may be left for the
        next gate's calls to fill. ``calibrating``: the null subject's span, whose copies of
        the inputs go into its own memory."""
        stream = self.gpu.stream.cuda_stream
        for index, group in enumerate(groups):
            marks.filling[index].record()
            if placed is not None and index:
                # the previous gate's outputs, timed with this gate's copy: GPU time the
                # subject's context takes meanwhile shows as copy excess. L2 is flushed first,
                # as in the calibration, where the outputs were not just written
                self.gpu.flush()
                for call in groups[index - 1]:
                    Landing.copy(placed[call])
            self.inputs.fill(ranges[group[0]][0], ranges[group[-1]][1], calibrating=calibrating)
            self.gpu.flush()
            marks.opened[index].record()
            cuda.write_value(stream, words, first + group[-1])
            cuda.wait_value(stream, words + 4, first + group[-1])
            marks.ended[index].record()
        marks.tail[0].record()
        if placed is not None and groups:
            # timed like the others: the last call's own work may still be running here
            self.gpu.flush()
            for call in groups[-1]:
                Landing.copy(placed[call])
        marks.tail[1].record()

    def _armed(
        self, link: Link, *, patience_s: float | None = None
    ) -> tuple[ArmedAnswer, bytes] | None:
        """The armed answer, or None when ``link`` has not answered within the patience (its
        forward waits on the GPU, whose work cannot start before the gate opens)."""
        patience = self.settings.enqueue_timeout_s if patience_s is None else patience_s
        if not link.channel.readable(patience):
            return None
        return link.answer(expect=ArmedAnswer)

    def _views(self, armed: tuple[ArmedAnswer, bytes], calls: int) -> list[list[Any]]:
        answer, payload = armed
        if len(answer.outputs) != calls:
            raise SubjectLost(
                self.subject.role, "answered for another number of calls", garbled=True
            )
        return self.subject.views(answer.outputs, payload)

    @contextlib.contextmanager
    def _stopped(self) -> Iterator[None]:
        """The job's user-code processes stopped; a group that is gone ends the timing (its
        leader ends only with the job's processes)."""
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(groups_stopped(self.groups))
            except ProcessLookupError:
                raise SubjectLost(
                    self.subject.role, "is gone (its process group could not be stopped)"
                ) from None
            yield

    def _settle(self) -> float:
        """Wait, on the GPU, until no other context has taken a turn for longer than a time
        slice: work the subject's context left running would take turns from the calibration,
        every one of which would be taken off the subject's calls. Its processes are stopped,
        so nothing new can start."""
        settled = self.gpu.hold.settle(
            quiet_ms=self.settings.settle_quiet_ms, limit_ms=self.settings.settle_limit_ms
        )
        if not settled.quiet:
            raise SubjectBusy(self.settings.settle_limit_ms)
        return settled.stolen_ms

    def _wait(self, event: torch.cuda.Event, done_word: int) -> None:
        wait_or_unblock(
            self.gpu, event, done_word, self.value, deadline=time.monotonic() + SPAN_DEADLINE_S
        )

    def _handoff(
        self,
        ranges: list[tuple[int, int]],
        groups: list[range],
        first: int,
        placed: list[list[Any]] | None,
    ) -> Handoff:
        """The same T-side work as a span, with the null subject doing one tiny kernel a call:
        the same gates, the same copies of the inputs, and of the subject's outputs
        (``placed``) where the span copied them gate by gate."""
        gate, words = gate_words(self.calibrator)
        marks = _Marks(len(groups))
        with self.gpu.hold.held():
            self.calibrator.send(
                ArmRequest(variant="null", calls=[[] for _ in ranges], gate=gate, value=first)
            )
            armed = self._armed(self.calibrator)
            with torch.cuda.stream(self.gpu.stream):
                self._enqueue(marks, ranges, groups, words, first, placed, calibrating=True)
        if armed is None and self._armed(self.calibrator, patience_s=SPAN_DEADLINE_S) is None:
            raise SubjectLost(self.calibrator.role, "did not arm its span")
        if ranges:
            self._wait(marks.ended[-1], words + 4)
        self.calibrator.ask(ReleaseRequest(), expect=OkAnswer)
        return Handoff(
            gated_ms=statistics.median(marks.gated_ms()) if ranges else 0.0,
            fill_ms=marks.fill_ms(),
            held_ms=self.gpu.hold.stolen_ms(),
            offset_ms=self.calibrator.null_offset.ms if self.calibrator.null_offset else 0.0,
        )
