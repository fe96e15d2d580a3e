"""What crosses between the judge's processes is checked before the trusted process reads it:
a description sent by a candidate cannot make it read outside what was sent."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from pydantic import ValidationError

from adaexplore_mcp.judge.settings import TimingSettings
from adaexplore_mcp.judge.trusted.span_result import Handoff, SpanResult
from adaexplore_mcp.judge.trusted.spans import plan_calls, run_spans
from adaexplore_mcp.judge.wire.frames import HEADER, Channel, ChannelClosed, FrameBuffer, FrameError
from adaexplore_mcp.judge.wire.subject import ValuesAnswer, answer_adapter
from adaexplore_mcp.judge.wire.values import (
    DecodeError,
    PayloadDecoder,
    PayloadEncoder,
    SequenceValue,
    TensorValue,
    Value,
    bytes_at,
)


def roundtrip(values):
    """Through an answer's JSON, as between processes."""
    encoder = PayloadEncoder()
    answer = ValuesAnswer(values=encoder.encode_all(values))
    specs = answer_adapter.validate_json(answer.model_dump_json()).values
    return PayloadDecoder(encoder.payload()).decode_all(specs), specs, encoder.payload()


def test_values_keep_their_layout_and_kinds():
    x = torch.arange(24.0).reshape(4, 6).t()[1:]  # a strided view
    values = [x, 3, 2.5, float("inf"), True, None, "s", [x, (1, 2)], object(), float("nan")]
    back, _, _ = roundtrip(values)
    assert torch.equal(back[0], x) and back[0].stride() == x.stride()
    assert back[1:7] == [3, 2.5, float("inf"), True, None, "s"]
    assert back[9] != back[9]  # NaN
    assert torch.equal(back[7][0], x) and back[7][1] == (1, 2)
    assert repr(back[8]) == "<object>"


def _tensor(**changes) -> TensorValue:
    fields = {
        "dtype": "float32",
        "shape": [4],
        "stride": [1],
        "offset": 0,
        "storage_bytes": 16,
        "device": "cpu",
        "at": 0,
    }
    return TensorValue(**(fields | changes))


@pytest.mark.parametrize(
    "spec",
    [
        _tensor(shape=[5]),  # a view past its storage
        _tensor(offset=1),
        _tensor(stride=[-1]),
        _tensor(storage_bytes=15),  # not a whole number of elements
        _tensor(at=8),  # bytes past the payload
        _tensor(dtype="object"),
        _tensor(shape=[2, 2], stride=[2]),
        # sizes torch cannot index: they overflowed in the trusted process, which then crashed
        _tensor(shape=[2**63], stride=[0]),
        _tensor(shape=[2**40, 2**40], stride=[0, 0]),
        _tensor(shape=[1], stride=[2**63]),
    ],
)
def test_a_description_that_does_not_fit_what_was_sent_is_refused(spec):
    with pytest.raises(DecodeError):
        PayloadDecoder(bytes(16)).decode(spec)


def test_memory_is_read_a_piece_at_a_time_past_a_c_int():
    """``ctypes.string_at`` takes a C int: an output of 2 GiB or more did not encode. Read in
    pieces, with pieces small enough to show it here."""
    import ctypes

    data = bytes(range(256)) * 5
    buffer = ctypes.create_string_buffer(data, len(data))
    address = ctypes.addressof(buffer)
    assert bytes_at(address, len(data), piece=7) == data == bytes_at(address, len(data))
    assert bytes_at(address, 0, piece=7) == b""


def test_values_nested_too_deep_are_refused():
    value: Value = _tensor()
    for _ in range(8):
        value = SequenceValue(kind="list", items=[value])
    with pytest.raises(DecodeError):
        PayloadDecoder(bytes(16)).decode(value)


def test_oversized_frames_are_refused_before_anything_is_allocated():
    with pytest.raises(FrameError):
        FrameBuffer(max_payload=1024).feed(HEADER.pack(10, 1 << 40))
    ours, theirs = socket.socketpair()
    channel = Channel(ours, max_payload=1024)
    theirs.sendall(HEADER.pack(2, 1 << 30) + b"{}")
    with pytest.raises(FrameError):
        channel.receive(answer_adapter)


def test_a_malformed_answer_and_a_closed_socket_are_told_apart():
    ours, theirs = socket.socketpair()
    channel = Channel(ours)
    theirs.sendall(HEADER.pack(13, 0) + b'{"kind":"no"}')
    with pytest.raises(FrameError):
        channel.receive(answer_adapter)
    theirs.close()
    with pytest.raises(ChannelClosed):
        channel.receive(answer_adapter)
    with pytest.raises(ChannelClosed):
        Channel(socket.socketpair()[0]).receive(answer_adapter, timeout_s=0.05)


@pytest.mark.parametrize(
    ("per_call_ms", "call_bytes", "calls", "spans"),
    [
        (0.09, 7 * 2**27, 9, 8),  # memory-bound: the budget (a tenth of 80 GiB) limits a span
        (0.5, 2**20, 4, 8),  # small inputs: a span of about 2 ms
        (5.0, 2**20, 1, 8),  # a long kernel: one call a span, enough spans for a median
        (0.004, 2**15, 32, 8),  # a tiny kernel: at most 32 calls a span (their queues)
    ],
)
def test_spans_are_planned_within_time_and_memory(per_call_ms, call_bytes, calls, spans):
    planned = plan_calls(
        TimingSettings(), per_call_ms=per_call_ms, call_bytes=call_bytes, total_memory=80 * 2**30
    )
    assert planned == (calls, spans)


def span(
    *,
    gated_ms: list[float],
    fill_ms: float,
    handoff: Handoff,
    fill_allowance_ms: float = 0.0,
    held_ms: float = 0.0,
    calls_per_gate: int = 1,
) -> SpanResult:
    return SpanResult(
        gated_ms=gated_ms,
        fill_ms=fill_ms,
        handoff=handoff,
        host_s=0.0,
        outputs=[],
        synchronizing=False,
        signals=None,  # type: ignore[arg-type]
        inputs_modified=False,
        held_ms=held_ms,
        fill_allowance_ms=fill_allowance_ms,
        calls_per_gate=calls_per_gate,
    )


class _WaitsOnTheGpu:
    """A subject whose forward waits on the GPU once past the probe: it answers only after its
    gates open, so the judge cannot copy a call's outputs before the next call runs."""

    def __init__(self) -> None:
        self.synchronizing = False
        self.calls: list[int] = []

    def span(self, sets: list[list]) -> SpanResult:
        late = bool(self.calls)
        self.calls.append(len(sets))
        self.synchronizing |= late
        result = span(gated_ms=[0.39] * len(sets), fill_ms=1.0, handoff=Handoff(0.29, 1.0))
        result.synchronizing = result.outputs_late = late
        result.outputs = [[torch.zeros(4)] for _ in sets]
        return result


def test_a_subject_that_answers_after_its_gates_open_is_timed_one_call_a_span():
    """Its outputs are copied after the span's last call, where one call's work put off to the
    next would be done: the span where that shows is not counted, and every later span has one
    call, copied before another gate opens."""
    timer = _WaitsOnTheGpu()
    measurement = run_spans(
        timer,  # type: ignore[arg-type]
        fresh_sets=lambda calls: [(seed, [torch.zeros(4)]) for seed in range(calls)],
        check=lambda sets, result, done: None,
        settings=TimingSettings(),
        total_memory=80 * 2**30,
    )
    planned = timer.calls[1]
    assert planned > 1
    assert timer.calls == [1, planned] + [1] * 8
    assert measurement.calls_per_span == 1 and measurement.spans == 8
    assert measurement.per_call_ms == pytest.approx([0.1] * 8)


class _HeldOnItsFirstSpan:
    """An honest 0.07 ms kernel whose first span shows 0.92 ms held while it armed, as the
    first span of many evaluations did on an H200."""

    def __init__(self) -> None:
        self.synchronizing = False
        self.calls: list[int] = []

    def span(self, sets: list[list]) -> SpanResult:
        first = not self.calls
        self.calls.append(len(sets))
        result = span(
            gated_ms=[0.36] * len(sets),
            fill_ms=1.0,
            handoff=Handoff(0.29, 1.0),
            held_ms=0.92 if first else 0.0,
            fill_allowance_ms=0.05,
        )
        result.outputs = [[torch.zeros(4)] for _ in sets]
        return result


def test_spans_are_planned_on_what_the_calls_took_not_on_what_was_charged():
    """Planned on the first span's charged time (0.94 ms a call), its spans had 3 calls; what
    is charged is counted in the spans that are measured, each span's over its calls."""
    timer = _HeldOnItsFirstSpan()
    run_spans(
        timer,  # type: ignore[arg-type]
        fresh_sets=lambda calls: [(seed, [torch.zeros(4)]) for seed in range(calls)],
        check=lambda sets, result, done: None,
        settings=TimingSettings(),
        total_memory=80 * 2**30,
    )
    planned, _ = plan_calls(
        TimingSettings(), per_call_ms=0.07, call_bytes=5 * 16 + 3 * 16, total_memory=80 * 2**30
    )
    assert timer.calls[1] == planned == 29


def test_a_call_is_timed_from_its_gate_so_the_copy_of_its_inputs_adds_no_jitter():
    handoff = Handoff(gated_ms=0.29, fill_ms=1.80)
    fast_copy = span(gated_ms=[0.44, 0.45, 0.43], fill_ms=1.70, handoff=handoff)
    assert fast_copy.per_call_ms(3) == pytest.approx(0.15)


def test_a_call_that_runs_nothing_behind_its_gate_takes_no_handoff_off_the_others():
    """A call that launches no kernel hands the GPU back in microseconds, a fraction of the
    null subject's handoff: its time is zero, not negative, so a call that put off its work
    to the next one gains nothing by it (it did 0.30 ms of work in two calls)."""
    handoff = Handoff(gated_ms=0.29, fill_ms=1.00)
    deferred = span(gated_ms=[0.015, 0.59], fill_ms=1.00, handoff=handoff)
    assert deferred.per_call_ms(2) == pytest.approx(0.15)


def test_gpu_time_the_subject_takes_while_its_gates_are_closed_is_charged_to_its_calls():
    """A candidate that computes on an ungated stream while the judge copies the inputs in
    slows the copies down by the time it took; what exceeds the allowance is counted."""
    handoff = Handoff(gated_ms=0.29, fill_ms=1.80)
    busy = span(gated_ms=[0.30] * 7, fill_ms=2.80, handoff=handoff, fill_allowance_ms=0.05)
    assert busy.fill_excess_ms == pytest.approx(1.0)
    assert busy.per_call_ms(7) == pytest.approx((7 * 0.01 + 0.95) / 7)


def test_gpu_time_the_subject_takes_while_it_arms_its_calls_is_charged_to_them():
    """Work launched on an ungated stream while the subject's host enqueues its calls preempts
    the judge's hold (trusted.hold); what it took beyond the calibration's is counted."""
    handoff = Handoff(gated_ms=0.29, fill_ms=1.00, held_ms=0.01)
    busy = span(
        gated_ms=[0.39] * 9, fill_ms=1.00, handoff=handoff, held_ms=0.76, fill_allowance_ms=0.05
    )
    assert busy.held_excess_ms == pytest.approx(0.75)
    assert busy.per_call_ms(9) == pytest.approx((9 * 0.10 + 0.70) / 9)


def test_the_copy_excess_an_honest_subject_shows_is_not_charged():
    """An honest subject's copy runs up to about 0.05 ms longer than the calibration's
    (measured on an H200); charging that added 1-4% and most of the spread to every median."""
    handoff = Handoff(gated_ms=0.29, fill_ms=1.00)
    honest = span(gated_ms=[0.36] * 15, fill_ms=1.03, handoff=handoff, fill_allowance_ms=0.05)
    assert honest.fill_excess_ms == pytest.approx(0.03)
    assert honest.per_call_ms(15) == pytest.approx(0.07)


def test_memory_lent_back_that_the_judge_shared_itself_is_refused():
    """The candidate's process lends the memory its timed inputs are written into. Lending
    back an arena of the judge's own would have the judge's inputs and the candidate's reads
    share one allocation the judge also uses elsewhere: refused before it is mapped."""
    from adaexplore_mcp.judge.trusted.link import Link, SubjectLost
    from adaexplore_mcp.judge.wire.subject import LendRequest, LentAnswer, request_adapter

    ours, theirs = socket.socketpair()
    link = Link("candidate", Channel(ours), torch.device("cpu"), {"ab" * 64})
    subject = Channel(theirs)
    subject.send(LentAnswer(ipc="ab" * 64))
    with pytest.raises(SubjectLost) as lost:
        link.borrow_arena(4096)
    assert lost.value.garbled and "shared with it" in lost.value.why
    request, _ = subject.receive(request_adapter, timeout_s=1)
    assert request == LendRequest(nbytes=1 << 20)


def test_a_process_without_a_gpu_lends_no_memory():
    from adaexplore_mcp.judge.subject.server import Codec, UserCodeError

    with pytest.raises(UserCodeError, match="only a GPU process lends memory"):
        Codec(torch.device("cpu")).lend(4096)


@pytest.mark.parametrize(
    "answer",
    [
        # an infinite time in the candidate's own profile passed, and the report built from it
        # failed to parse in the pool: a problem set's whole run ended there
        '{"kind":"called","outputs":[],"signals":{"profile":{"launch_us":Infinity}}}',
        '{"kind":"called","outputs":[],"signals":{"profile":{"torch_us":NaN}}}',
        '{"kind":"called","outputs":[],"signals":{"profile":{"kernels":'
        '[{"name":"k","triton":true,"launches":1,"us":Infinity}]}}}',
        '{"kind":"called","outputs":[],"signals":{"profile":{"kernels":'
        '[{"name":"k","triton":true,"launches":-1,"us":1.0}]}}}',
        '{"kind":"called","outputs":[],"host_s":Infinity}',
        '{"kind":"armed","outputs":[],"host_s":NaN}',
    ],
)
def test_times_a_candidate_reports_must_be_finite(answer):
    with pytest.raises(ValidationError):
        answer_adapter.validate_json(answer)


def test_descriptions_cannot_claim_more_bytes_than_were_sent():
    """Many descriptions of one payload's bytes: each was copied, so 12 descriptions of a
    256 MiB payload made the trusted process hold 3.5 GiB (without a limit, up to the
    machine's memory: a judge failure)."""
    decoder = PayloadDecoder(bytes(16))
    decoder.decode(_tensor())
    with pytest.raises(DecodeError, match="more bytes"):
        decoder.decode(_tensor())
    # what an honest encoder sends, each tensor's bytes once, decodes whole
    x, y = torch.arange(4.0), torch.ones(3, dtype=torch.float64)
    back, _, _ = roundtrip([x, y, x])
    assert torch.equal(back[0], x) and torch.equal(back[1], y) and torch.equal(back[2], x)


def _share_tensors(connection) -> None:
    """A user-code process's side: tensors of one allocation (views of another dtype and at
    offsets among them) described for the trusted process, kept alive until it has read them."""
    from adaexplore_mcp.judge.wire.ipc import SharingEncoder

    torch.cuda.init()
    block = torch.arange(4096, dtype=torch.float32, device="cuda")
    small = torch.full((7,), 3, dtype=torch.int64, device="cuda")
    pair = torch.arange(6, dtype=torch.float16, device="cuda").reshape(2, 3)
    odd = torch.empty(0, dtype=torch.uint8, device="cuda").set_(
        block.untyped_storage(), 4, (8, 4), (4, 1)
    )
    encoder = SharingEncoder()
    connection.send([v.model_dump() for v in encoder.encode_all([block[5:], small, pair.t(), odd])])
    connection.recv()


@contextlib.contextmanager
def _shared_by_child(target) -> Iterator[tuple[list[Value], Any]]:
    """The descriptions a spawned process (``target``) sends of tensors it shares, and our end
    of its pipe; it is told ``done`` and joined after."""
    import multiprocessing

    from pydantic import TypeAdapter

    torch.zeros(1, device="cuda")  # a context for the driver's calls, as the trusted one has
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    child = context.Process(target=target, args=(theirs,))
    child.start()
    try:
        yield TypeAdapter(list[Value]).validate_python(ours.recv()), ours
    finally:
        ours.send("done")
        child.join(timeout=30)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_tensors_shared_from_one_allocation_are_read_in_place_of_their_storage():
    """The trusted process maps each shared allocation once and reads every tensor as a slice
    of it: each value, layout and offset arrives as sent, and a description reaching past the
    allocation, or into memory that has become the judge's own, is refused."""
    from adaexplore_mcp.judge.wire.ipc import CopyingDecoder

    with _shared_by_child(_share_tensors) as (specs, _):
        own: set[str] = set()
        decoder = CopyingDecoder(b"", own_handles=own)
        block, small, pair, odd = decoder.decode_all(specs)
        assert torch.equal(block.cpu(), torch.arange(5, 4096, dtype=torch.float32))
        assert torch.equal(small.cpu(), torch.full((7,), 3, dtype=torch.int64))
        assert torch.equal(pair.cpu(), torch.arange(6, dtype=torch.float16).reshape(2, 3).t())
        assert odd.shape == (8, 4) and odd.dtype == torch.uint8
        expected = torch.arange(1, 9, dtype=torch.float32).view(torch.uint8)
        assert torch.equal(odd.cpu().flatten(), expected)
        too_far = specs[1].model_copy(update={"alloc_offset": (1 << 40)})
        with pytest.raises(DecodeError, match="past the end"):
            decoder.decode_all([too_far])
        # memory that becomes the judge's own once mapped (lent for the inputs) is refused for
        # every tensor after, not only where it was first mapped
        own.add(specs[0].ipc)
        with pytest.raises(DecodeError, match="judge's own"):
            decoder.decode_all([specs[0]])
        decoder.close()


def _share_then_write(connection) -> None:
    """Shares a zeroed tensor (in a list with a number, and a view of it in a tuple), and fills
    it with ones when asked, as a later call's launch would."""
    from adaexplore_mcp.judge.wire.ipc import SharingEncoder

    torch.cuda.init()
    owed = torch.zeros(256, device="cuda")
    torch.cuda.synchronize()
    connection.send([v.model_dump() for v in SharingEncoder().encode_all([[owed, 2], (owed[8:],)])])
    connection.recv()
    owed.fill_(1.0)
    torch.cuda.synchronize()
    connection.send("written")
    connection.recv()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_outputs_are_read_when_copied_not_when_their_description_is_checked():
    """A timed span checks every call's outputs before its first gate opens and copies each
    call's right after its done word (``trusted.timing``): a copy holds what the memory held
    then, whatever the other process writes after, and keeps the outputs' structure."""
    from adaexplore_mcp.judge.wire.ipc import CopyingDecoder, copied

    with _shared_by_child(_share_then_write) as (specs, ours):
        decoder = CopyingDecoder(b"", own_handles=set())
        views = decoder.view_all(specs)
        before = copied(views)
        torch.cuda.synchronize()
        ours.send("write")
        assert ours.recv() == "written"
        after = copied(views)
        assert isinstance(after[0], list) and after[0][1] == 2 and isinstance(after[1], tuple)
        assert before[0][0].sum().item() == 0 and before[1][0].sum().item() == 0
        assert after[0][0].sum().item() == 256 and after[1][0].sum().item() == 248
        assert after[0][0].data_ptr() != views[0][0].storage.data_ptr()  # this process's
        decoder.close()
