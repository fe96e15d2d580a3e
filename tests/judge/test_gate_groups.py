"""Calls behind one gate (``timing.calls_per_gate``): which calls share one, how a span with
groups is enqueued, and what a call is charged. The span itself runs only on a GPU; here the
trusted stream's operations are recorded in order."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from pydantic import ValidationError

from adaexplore_mcp.judge.pool.baselines import baseline_key
from adaexplore_mcp.judge.settings import TimingSettings
from adaexplore_mcp.judge.trusted import timing
from adaexplore_mcp.judge.trusted.gate_groups import gate_groups
from adaexplore_mcp.judge.trusted.landing import Landed, Landing
from adaexplore_mcp.judge.trusted.span_result import Handoff
from adaexplore_mcp.judge.trusted.spans import plan_calls
from adaexplore_mcp.tasks import get_bundled_task

from .test_wire import span


def landed(storage: torch.Tensor) -> Landed:
    """A placed output over ``storage`` (uint8): only its memory matters here."""
    return Landed(shared=SimpleNamespace(storage=storage), target=storage)  # type: ignore[arg-type]


def outputs_of_their_own(calls: int) -> list[list[Landed]]:
    return [[landed(torch.empty(64, dtype=torch.uint8))] for _ in range(calls)]


def test_calls_share_a_gate_in_groups_that_divide_the_span():
    placed = outputs_of_their_own(8)
    assert gate_groups(8, 4, placed) == [range(0, 4), range(4, 8)]
    assert gate_groups(8, 1, placed) == [range(call, call + 1) for call in range(8)]


@pytest.mark.parametrize(
    ("calls", "placed"),
    [
        (6, outputs_of_their_own(6)),  # 4 does not divide 6
        (8, None),  # the outputs come only once the gates are open: a gate a call already
    ],
    ids=["not_divided", "outputs_not_placed"],
)
def test_otherwise_every_call_has_a_gate_of_its_own(calls, placed):
    assert gate_groups(calls, 4, placed) == [range(call, call + 1) for call in range(calls)]


def test_calls_of_one_group_whose_outputs_share_memory_get_a_gate_each():
    """A kernel that writes every call into one buffer of its own: behind one gate only the
    last call's outputs would be left when they are copied, and every other call would read
    as wrong."""
    buffer = torch.empty(256, dtype=torch.uint8)
    placed = outputs_of_their_own(8)
    placed[1], placed[2] = [landed(buffer[:128])], [landed(buffer[64:192])]
    assert gate_groups(8, 4, placed) == [range(call, call + 1) for call in range(8)]


def test_outputs_shared_across_groups_or_within_a_call_keep_the_groups():
    """A group's outputs are copied before the next group's gate opens, and one call's own
    outputs may alias each other."""
    buffer = torch.empty(256, dtype=torch.uint8)
    placed = outputs_of_their_own(8)
    placed[3], placed[4] = [landed(buffer)], [landed(buffer)]
    placed[6] = [*placed[6], landed(placed[6][0].shared.storage[:32])]
    assert gate_groups(8, 4, placed) == [range(0, 4), range(4, 8)]


class _Recorder:
    def __init__(self, log: list[tuple], name: str, index: int) -> None:
        self.log, self.name, self.index = log, name, index

    def record(self) -> None:
        self.log.append((self.name, self.index))


def _marks(log: list[tuple], gates: int) -> SimpleNamespace:
    def events(name: str, count: int) -> list[_Recorder]:
        return [_Recorder(log, name, index) for index in range(count)]

    return SimpleNamespace(
        filling=events("filling", gates),
        opened=events("opened", gates),
        ended=events("ended", gates),
        tail=events("tail", 2),
    )


def test_a_gate_opens_for_its_whole_group_once_its_inputs_exist(monkeypatch):
    """Every input of a group is written before its gate opens to the group's last call's
    number (the subject's calls wait for the gate to reach theirs), the clock stops at the last
    call's done word, and the group's outputs are copied before the next group's inputs exist."""
    log: list[tuple] = []
    timer = object.__new__(timing.SpanTimer)
    timer.gpu = SimpleNamespace(  # type: ignore[assignment]
        stream=SimpleNamespace(cuda_stream=7), flush=lambda: log.append(("flush",))
    )
    timer.inputs = SimpleNamespace(  # type: ignore[assignment]
        fill=lambda start, end, calibrating=False: log.append(("fill", start, end))
    )
    monkeypatch.setattr(timing.cuda, "write_value", lambda s, a, v: log.append(("open", v)))
    monkeypatch.setattr(timing.cuda, "wait_value", lambda s, a, v: log.append(("done", v)))
    monkeypatch.setattr(Landing, "copy", staticmethod(lambda out: log.append(("copy", out))))
    ranges = [(call * 10, call * 10 + 10) for call in range(4)]
    placed = [[f"out{call}"] for call in range(4)]
    groups = gate_groups(4, 2, placed)
    timer._enqueue(_marks(log, len(groups)), ranges, groups, 1000, 5, placed)  # type: ignore[arg-type]
    assert log == [
        ("filling", 0),
        ("fill", 0, 20),
        ("flush",),
        ("opened", 0),
        ("open", 6),
        ("done", 6),
        ("ended", 0),
        ("filling", 1),
        ("flush",),
        ("copy", ["out0"]),
        ("copy", ["out1"]),
        ("fill", 20, 40),
        ("flush",),
        ("opened", 1),
        ("open", 8),
        ("done", 8),
        ("ended", 1),
        ("tail", 0),
        ("flush",),
        ("copy", ["out2"]),
        ("copy", ["out3"]),
        ("tail", 1),
    ]


def test_a_gate_takes_one_handoff_off_all_its_calls():
    """Two gates of four calls, 0.37 ms each, less a handoff of 0.09 ms a gate: 0.07 ms a call."""
    handoff = Handoff(gated_ms=0.09, fill_ms=1.0)
    grouped = span(gated_ms=[0.37, 0.37], fill_ms=1.0, handoff=handoff, calls_per_gate=4)
    assert grouped.own_ms() == pytest.approx(0.07)
    assert grouped.per_call_ms(8) == pytest.approx(0.07)


@pytest.mark.parametrize(("per_gate", "calls"), [(4, 28), (3, 27), (1, 29), (32, 29)])
def test_a_span_holds_whole_gates(per_gate, calls):
    """A 0.07 ms kernel: 29 calls fill a span; with gates of 4 it has 28, and a gate larger
    than the span leaves it a gate a call."""
    planned, _ = plan_calls(
        TimingSettings(calls_per_gate=per_gate),
        per_call_ms=0.07,
        call_bytes=2**16,
        total_memory=80 * 2**30,
    )
    assert planned == calls


@pytest.mark.parametrize("per_gate", [0, 33])
def test_calls_per_gate_outside_one_to_a_span_are_refused(per_gate):
    with pytest.raises(ValidationError):
        TimingSettings(calls_per_gate=per_gate)


def test_baselines_timed_with_calls_behind_a_gate_are_kept_apart():
    task = get_bundled_task("softmax")
    plain = baseline_key(task, "NVIDIA H200", "2.11", "3.6")
    assert baseline_key(task, "NVIDIA H200", "2.11", "3.6", calls_per_gate=1) == plain
    assert baseline_key(task, "NVIDIA H200", "2.11", "3.6", calls_per_gate=4) != plain
