"""Holding the GPU while a subject arms its calls, and seeing what it ran meanwhile.

Between asking a subject to arm a span and opening its gate, the trusted process waits for the
subject's host to enqueue K calls: a fraction of a millisecond in which the GPU would be idle.
Work the subject launches there on a stream the gate does not hold (zeroing a workspace the
gated calls then use, say) would run before the clock starts and cost the calls nothing: on an
H100, 0.75 ms a span of it went uncounted (``tests/judge/test_gpu_integrity.py``).

So the trusted process enqueues a *hold* before it asks: one program that spins on a word until
the trusted process has enqueued the span behind it. The GPU time-slices between contexts, so
the subject's work can still run, but only by preempting the hold, and a preemption shows as a
gap in the hold's reading of the global timer. The gaps, summed, are the GPU time the subject
took while the judge waited; the clock charges them like the copy excess.

The same reading of the timer tells when no other context has work: after a span, with the
job's user-code processes stopped, the trusted process *settles* (``Hold.settle``) until it has
seen no other context's turn for longer than the GPU's time slice, before it times the null
subject. Work a subject left running would otherwise take turns from the calibration, and what
the calibration measures is taken off every call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from adaexplore_mcp.judge.wire import cuda

# A loop iteration of the hold (a volatile load and a timer read) takes well under a
# microsecond; a longer gap between two readings is another context's turn on the GPU.
PREEMPTION_NS = 3_000


@triton.jit
def global_ns():
    return tl.inline_asm_elementwise(
        "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
    )


@triton.jit
def hold_kernel(word_ptr, value, stolen_ptr, PREEMPTION: tl.constexpr):
    previous = global_ns()
    stolen = previous * 0
    while tl.load(word_ptr, volatile=True) < value:
        now = global_ns()
        gap = now - previous
        stolen += tl.where(gap > PREEMPTION, gap, 0)
        previous = now
    tl.store(stolen_ptr, stolen)


@triton.jit(do_not_specialize=["quiet_ns", "limit_ns"])
def settle_kernel(out_ptr, quiet_ns, limit_ns, PREEMPTION: tl.constexpr):
    start = global_ns()
    previous = start
    quiet_since = start
    stolen = start * 0
    while (previous - quiet_since < quiet_ns) & (previous - start < limit_ns):
        now = global_ns()
        gap = now - previous
        preempted = gap > PREEMPTION
        stolen += tl.where(preempted, gap, 0)
        quiet_since = tl.where(preempted, now, quiet_since)
        previous = now
    tl.store(out_ptr, stolen)
    tl.store(out_ptr + 1, previous - quiet_since)


@dataclass(frozen=True)
class Settled:
    """What the GPU did while the trusted process waited for it to be quiet."""

    stolen_ms: float  # other contexts' turns, summed
    quiet: bool  # no other context took a turn for the quiet time, within the limit


class Hold:
    """``with hold.held():`` around asking a subject to arm and enqueueing the span behind the
    hold; leaving the block releases it, whatever happened (a hold never released stalls the
    stream)."""

    def __init__(self, device: torch.device, stream: torch.cuda.Stream) -> None:
        self.stream = stream
        self.releaser = torch.cuda.Stream(device)
        self.word = torch.zeros(1, dtype=torch.int32, device=device)
        self.stolen = torch.zeros(1, dtype=torch.int64, device=device)
        self.settled = torch.zeros(2, dtype=torch.int64, device=device)
        self.value = 0
        with self.held():  # compiled and loaded now, not inside a span
            pass
        self.settle(quiet_ms=0.0, limit_ms=0.0)
        torch.cuda.synchronize(device)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self.value += 1
        with torch.cuda.stream(self.stream):
            hold_kernel[(1,)](
                self.word, self.value, self.stolen, PREEMPTION=PREEMPTION_NS, num_warps=1
            )
        try:
            yield
        finally:
            cuda.write_value(self.releaser.cuda_stream, self.word.data_ptr(), self.value)

    def stolen_ms(self) -> float:
        """GPU time other contexts took during the last hold (read after the stream passed it)."""
        return float(self.stolen.item()) / 1e6

    def settle(self, *, quiet_ms: float, limit_ms: float) -> Settled:
        """Spin on this stream until no other context has taken a turn for ``quiet_ms``, or
        until ``limit_ms`` have passed; waits for it."""
        with torch.cuda.stream(self.stream):
            settle_kernel[(1,)](
                self.settled,
                int(quiet_ms * 1e6),
                int(limit_ms * 1e6),
                PREEMPTION=PREEMPTION_NS,
                num_warps=1,
            )
            stolen_ns, quiet_ns = self.settled.tolist()  # read behind the kernel, on its stream
        return Settled(stolen_ms=stolen_ns / 1e6, quiet=quiet_ns >= quiet_ms * 1e6)
