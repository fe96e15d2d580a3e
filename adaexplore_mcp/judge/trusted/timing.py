"""The clock: timing another process's forward from the trusted process's own stream.

One *span* times ``K`` calls of forward. The subject (the candidate's or the task's process)
enqueues its K calls behind a gate, a 32-bit word in this process's memory, and a write of the
span's number to a done word after them, and answers once it has. This process then enqueues on
its own stream: its start event; a copy of the K fresh input sets into the buffers the subject's
calls read (with a kernel, so the subject cannot see them before the clock starts); an L2 flush;
the gate's opening; a wait on the done word; its end event; and a copy of every output the
subject named. So the subject's host (and any load on this machine) is outside the span, the
inputs did not exist for the subject before it, and every output is taken right where the
span ends.

Handing the GPU from one process's context to another's costs a stable fraction of a
millisecond (``notes/cross-process-timing-h100.md``). A *calibration span* with a trusted null
subject (``trusted.calibrator``), the same copy and flush and one tiny kernel, measures that
handoff next to every span.

The clock that counts runs from the gate's opening (an event after the copy and the flush) to
the done word: copying gigabytes of inputs takes longer than the calls themselves on some tasks,
and its jitter would otherwise land in every call. The copy is still timed, in the span and in
the calibration: whatever the span's copy took beyond the calibration's is GPU time the
subject's context held while its gate was closed, and what exceeds an allowance is charged to
the calls. A span's time per call is (gated + charged copy excess - handoff) / K.

Before the copy there is a wait: the subject's host enqueues its calls after it is asked to,
while the GPU would sit idle, free for work the subject launches on a stream the gate does not
hold. The trusted process keeps the GPU busy through that wait with a *hold* (``trusted.hold``)
that measures the GPU time other contexts take from it; beyond the calibration's, that time is
charged like the copy excess.

The allowance exists because an honest subject's copy excess is not zero: on an H200 it was
0.001-0.048 ms a span (median per evaluation, bundled solutions), whatever the span's size,
while the calibration's own copy varies little. Charging all of it added 1-4% to every median
and most of the spread between evaluations; charging what exceeds the allowance keeps the
check on work hidden before the gate (``timing.fill_allowance_ms`` a span, at most, goes
uncounted).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

from adaexplore_mcp.judge.settings import TimingSettings
from adaexplore_mcp.judge.trusted.gpu import Gpu
from adaexplore_mcp.judge.trusted.link import Link, SubjectLost
from adaexplore_mcp.judge.wire import cuda
from adaexplore_mcp.judge.wire.ipc import ALIGN, LentArena, storage_bytes
from adaexplore_mcp.judge.wire.subject import (
    ArmedAnswer,
    ArmRequest,
    CallAnswer,
    CallRequest,
    Gate,
    OkAnswer,
    ReleaseRequest,
    Signals,
)
from adaexplore_mcp.judge.wire.values import Encoder, PayloadEncoder, TensorValue, Value, describe

SPAN_DEADLINE_S = 60.0


class SubjectStuck(Exception):
    """The subject armed its calls but never reported them done."""


class _LayoutEncoder(Encoder):
    """Places tensors in an arena's layout without copying them: their storage bytes go to a
    staging buffer of this process first, and into the arena only inside the span."""

    def __init__(self, arena: LentArena) -> None:
        self.arena = arena
        self.payload = PayloadEncoder()
        self.placed: list[tuple[int, Any]] = []

    def tensor(self, tensor) -> TensorValue:
        if tensor.device.type != "cuda":
            return self.payload.tensor(tensor)
        nbytes = tensor.untyped_storage().nbytes()
        start = self.arena.reserve(nbytes)
        self.placed.append((start, tensor))
        return describe(tensor, "cuda", ipc=self.arena.handle, alloc_offset=start)


def set_bytes(values: list[Any]) -> int:
    total = 0
    for value in values:
        if isinstance(value, torch.Tensor) and value.device.type == "cuda":
            total += -(-value.untyped_storage().nbytes() // ALIGN) * ALIGN
        elif isinstance(value, list | tuple):
            total += set_bytes(list(value))
    return total


@dataclass
class Handoff:
    """The calibration span: the null subject's gated time, and its inputs' copy and flush."""

    gated_ms: float
    fill_ms: float
    held_ms: float = 0.0  # GPU time other contexts took while the null subject armed


@dataclass
class SpanResult:
    span_ms: float  # from the gate's opening to the done word (or to the outputs taken)
    fill_ms: float  # the inputs' copy and the flush before the gate opened
    handoff: Handoff
    host_s: float
    outputs: list[list[Any]]
    synchronizing: bool
    signals: Signals
    inputs_modified: bool
    held_ms: float = 0.0  # GPU time other contexts took while the subject armed
    fill_allowance_ms: float = 0.0

    @property
    def handoff_ms(self) -> float:
        return self.handoff.gated_ms

    @property
    def fill_excess_ms(self) -> float:
        """GPU time the subject's context took while its gate was closed."""
        return max(self.fill_ms - self.handoff.fill_ms, 0.0)

    @property
    def held_excess_ms(self) -> float:
        """GPU time the subject's context took while the judge held the GPU for it to arm."""
        return max(self.held_ms - self.handoff.held_ms, 0.0)

    @property
    def charged_excess_ms(self) -> float:
        """The GPU time the subject took before its gate opened, beyond what honest subjects
        show: counted as calls."""
        return max(self.fill_excess_ms + self.held_excess_ms - self.fill_allowance_ms, 0.0)

    def per_call_ms(self, calls: int) -> float:
        return max(self.span_ms + self.charged_excess_ms - self.handoff_ms, 0.0) / calls


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
    ) -> None:
        self.subject, self.calibrator, self.gpu = subject, calibrator, gpu
        self.settings, self.variant, self.compiled = settings, variant, compiled
        self.value = 0
        self.synchronizing = False
        self._gate, self._words = self._words_for(subject)
        self._null_gate, self._null_words = self._words_for(calibrator)
        self._inputs: LentArena | None = None
        self._staging: torch.Tensor | None = None

    @staticmethod
    def _words_for(link: Link) -> tuple[Gate, int]:
        arena = link.new_arena(ALIGN)
        arena.bytes[:8].zero_()
        torch.cuda.synchronize()
        return Gate(ipc=arena.handle, gate_offset=0, done_offset=4), arena.pointer

    # -- one span ------------------------------------------------------------------------------

    def span(self, sets: list[list[Any]]) -> SpanResult:
        """Time one call of forward per input set (each set used once, never seen before)."""
        calls, payload, used = self._stage(sets)
        self.value += 1
        request = ArmRequest(
            variant=self.variant,
            calls=calls,
            gate=self._gate,
            value=self.value,
            compiled=self.compiled,
        )
        with self.gpu.hold.held():  # the GPU stays ours until the span is enqueued behind it
            started = time.perf_counter()
            self.subject.send(request, payload)
            # once a forward has shown it waits on the GPU, the gate opens without waiting long
            armed = self._armed(self.subject, patience_s=0.05 if self.synchronizing else None)
            host_s = time.perf_counter() - started
            if armed is not None:  # map what the outputs live in now: nothing may wait in the span
                self._map(armed)
            start, opened, end, taken = (torch.cuda.Event(enable_timing=True) for _ in range(4))
            self.gpu.stream.wait_stream(torch.cuda.current_stream())  # the staged inputs
            with torch.cuda.stream(self.gpu.stream):
                self._enqueue(start, opened, end, used, self._words)
        with torch.cuda.stream(self.gpu.stream):
            synchronizing = armed is None
            if armed is None:  # forward waits on the GPU: its answer comes once the gate is open
                armed = self._armed(self.subject, patience_s=SPAN_DEADLINE_S)
                if armed is None:
                    raise SubjectLost(self.subject.role, "did not arm its timed calls")
                host_s = time.perf_counter() - started
            outputs = self._take(armed)
            taken.record()
        self._wait(taken, self._words + 4)
        held_ms = self.gpu.hold.stolen_ms()
        # a synchronizing forward ran its host code inside the span: it ends with the outputs
        span_ms = opened.elapsed_time(taken if synchronizing else end)
        fill_ms = start.elapsed_time(opened)
        modified = self._inputs_modified(used)
        self.subject.ask(ReleaseRequest(), expect=OkAnswer)
        handoff = self._handoff(used)
        self.synchronizing |= synchronizing
        return SpanResult(
            span_ms=span_ms,
            fill_ms=fill_ms,
            handoff=handoff,
            host_s=host_s,
            outputs=outputs,
            synchronizing=synchronizing,
            signals=armed[0].signals,
            inputs_modified=modified,
            held_ms=held_ms,
            fill_allowance_ms=self.settings.fill_allowance_ms,
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

    def _enqueue(self, start, opened, end, used: int, words: int) -> None:
        """A span on this process's stream: the inputs go in and L2 is flushed (timed from
        ``start`` to ``opened``), the gate opens, and the clock stops once the subject has
        written the done word."""
        stream = self.gpu.stream.cuda_stream
        start.record()
        self._fill(used)
        self.gpu.flush()
        opened.record()
        cuda.write_value(stream, words, self.value)
        cuda.wait_value(stream, words + 4, self.value)
        end.record()

    def _inputs_modified(self, used: int) -> bool:
        """Whether the subject wrote into its inputs: compared 8 bytes at a time (torch's
        comparison makes a flag per element, 3-4 ms a span byte by byte on an H200)."""
        assert self._inputs is not None and self._staging is not None
        words = used // 8 * 8
        staged, lent = self._staging, self._inputs.bytes
        return not (
            torch.equal(staged[:words].view(torch.int64), lent[:words].view(torch.int64))
            and torch.equal(staged[words:used], lent[words:used])
        )

    def _stage(self, sets: list[list[Any]]) -> tuple[list[list[Value]], bytes, int]:
        """Lay the sets out in the subject's input arena, their bytes in a staging buffer."""
        needed = sum(set_bytes(values) for values in sets)
        if self._inputs is None or self._inputs.size < needed:
            self._inputs = self.subject.borrow_arena(needed)
            self._staging = torch.empty(
                self._inputs.size, dtype=torch.uint8, device=self.gpu.device
            )
        self._inputs.reset()
        layout = _LayoutEncoder(self._inputs)
        calls = [layout.encode_all(values) for values in sets]
        assert self._staging is not None
        for start, tensor in layout.placed:
            source = storage_bytes(tensor)
            self._staging[start : start + source.numel()].copy_(source)
        return calls, layout.payload.payload(), self._inputs.used

    def _fill(self, used: int) -> None:
        """The inputs into the subject's arena, with a kernel of this process's (an SM copy)."""
        assert self._inputs is not None and self._staging is not None
        if used:
            torch.bitwise_or(self._staging[:used], 0, out=self._inputs.bytes[:used])

    def _armed(
        self, link: Link, *, patience_s: float | None = None
    ) -> tuple[ArmedAnswer, bytes] | None:
        """The armed answer, or None when ``link`` has not answered within the patience (its
        forward waits on the GPU, whose work cannot start before the gate opens)."""
        patience = self.settings.enqueue_timeout_s if patience_s is None else patience_s
        if not link.channel.readable(patience):
            return None
        return link.answer(expect=ArmedAnswer)

    def _map(self, armed: tuple[ArmedAnswer, bytes]) -> None:
        for outputs in armed[0].outputs:
            self.subject.map(outputs, self.subject.own_handles)

    def _take(self, armed: tuple[ArmedAnswer, bytes]) -> list[list[Any]]:
        answer, payload = armed
        own = self.subject.own_handles
        return [self.subject.take(outputs, payload, own) for outputs in answer.outputs]

    def _wait(self, event: torch.cuda.Event, done_word: int) -> None:
        deadline = time.monotonic() + SPAN_DEADLINE_S
        while not event.query():
            if time.monotonic() > deadline:
                with torch.cuda.stream(self.gpu.side):
                    cuda.set_word(self.gpu.side.cuda_stream, done_word, self.value)
                raise SubjectStuck
            time.sleep(0.0002)

    def _handoff(self, used: int) -> Handoff:
        """The same T-side work as a span, with the null subject doing one tiny kernel."""
        with self.gpu.hold.held():
            self.calibrator.send(
                ArmRequest(variant="null", calls=[[]], gate=self._null_gate, value=self.value)
            )
            armed = self._armed(self.calibrator)
            start, opened, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            with torch.cuda.stream(self.gpu.stream):
                self._enqueue(start, opened, end, used, self._null_words)
        if armed is None and self._armed(self.calibrator, patience_s=SPAN_DEADLINE_S) is None:
            raise SubjectLost(self.calibrator.role, "did not arm its span")
        self._wait(end, self._null_words + 4)
        self.calibrator.ask(ReleaseRequest(), expect=OkAnswer)
        return Handoff(
            gated_ms=opened.elapsed_time(end),
            fill_ms=start.elapsed_time(opened),
            held_ms=self.gpu.hold.stolen_ms(),
        )
