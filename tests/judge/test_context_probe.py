"""The timed process's context is measured before it holds user code
(``trusted.context_probe``): the process serves null calls before its job comes, the trusted
process measures it before handing the job over, and every calibration of the job is read as
in that context. What needs a GPU is in ``test_gpu_integrity.py``."""

from __future__ import annotations

import socket
from typing import ClassVar

import pytest

from adaexplore_mcp.judge.trusted import resident
from adaexplore_mcp.judge.trusted.context_probe import offset_of
from adaexplore_mcp.judge.trusted.link import SubjectLost
from adaexplore_mcp.judge.trusted.span_result import Handoff, SpanResult
from adaexplore_mcp.judge.wire.frames import Channel
from adaexplore_mcp.judge.wire.jobs import ChildJob, HandedJob, ResidentOrder, probed_role
from adaexplore_mcp.judge.wire.subject import QuitRequest, Signals, request_adapter
from adaexplore_mcp.judge.worker import processes


class _Link:
    def __init__(self, role: str) -> None:
        self.role = role
        self.sent: list[object] = []
        self.context_offset_ms = 0.0

    def send(self, request, payload: bytes = b"") -> None:
        self.sent.append(request)


def _job(kind: str, device: str = "cuda:0") -> ChildJob:
    return ChildJob(kind=kind, device=device)


# -- who is measured -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "device", "role"),
    [
        ("eval", "cuda:0", "candidate"),
        ("baseline", "cuda:1", "task"),
        ("eval", "cpu", None),
        ("lint", "cuda:0", None),
        ("probe", "cuda:0", None),
    ],
)
def test_the_probed_process_is_the_one_whose_forward_the_job_times(kind, device, role):
    assert probed_role(_job(kind, device)) == role


# -- the offset ------------------------------------------------------------------------------


def test_the_offset_is_the_median_difference_with_the_two_timed_in_turns():
    subject, calibrator = _Link("candidate"), _Link("calibrator")
    order: list[str] = []
    readings = {"candidate": iter([0.2915, 0.2917, 0.2990, 0.2916]), "calibrator": iter([0.29] * 4)}

    def span(link) -> float:
        order.append(link.role)
        return next(readings[link.role])

    offset = offset_of(span, subject, calibrator, rounds=4, limit_ms=0.01)
    assert order == ["candidate", "calibrator", "calibrator", "candidate"] * 2
    # one disturbed round (0.2990) does not move the median
    assert offset == pytest.approx(0.00165)


def test_an_offset_beyond_the_limit_is_not_applied():
    subject, calibrator = _Link("candidate"), _Link("calibrator")
    readings = {"candidate": 0.31, "calibrator": 0.29}
    assert (
        offset_of(lambda link: readings[link.role], subject, calibrator, rounds=3, limit_ms=0.01)
        == 0.0
    )
    assert offset_of(
        lambda link: readings[link.role], subject, calibrator, rounds=3, limit_ms=0.05
    ) == pytest.approx(0.02)


def test_each_call_is_charged_its_gated_time_less_the_handoff_as_in_the_subjects_context():
    result = SpanResult(
        gated_ms=[0.36, 0.37],
        fill_ms=0.0,
        handoff=Handoff(gated_ms=0.29, fill_ms=0.0),
        host_s=0.0,
        outputs=[],
        synchronizing=False,
        signals=Signals(),
        inputs_modified=False,
        context_offset_ms=0.002,
    )
    assert result.handoff_ms == pytest.approx(0.292)
    assert result.per_call_ms(2) == pytest.approx((0.068 + 0.078) / 2)


# -- the trusted side: measured, then told to quit, before the job ---------------------------


def test_the_trusted_process_measures_the_timed_process_then_ends_its_null_calls(monkeypatch):
    seen = {}

    def measured(subject, calibrator, settings, *, stopped):
        seen.update(subject=subject.role, calibrator=calibrator.role, stopped=list(stopped))
        assert subject.sent == []  # nothing told to it before it is measured
        return 0.0017

    monkeypatch.setattr(resident, "context_offset", measured)
    links = {role: _Link(role) for role in ("candidate", "task", "calibrator")}
    order = ResidentOrder(kind="job", seq=1, groups={"candidate": 101, "task": 202})
    resident._probe_context(_job("eval"), links, order)
    assert seen == {"subject": "candidate", "calibrator": "calibrator", "stopped": [202]}
    assert links["candidate"].context_offset_ms == 0.0017
    assert links["candidate"].sent == [QuitRequest()]
    assert links["task"].sent == [] and links["calibrator"].sent == []


def test_a_process_lost_while_measured_is_still_told_to_quit_and_gets_no_offset(monkeypatch):
    def lost(subject, calibrator, settings, *, stopped):
        raise SubjectLost("task", "is gone")

    monkeypatch.setattr(resident, "context_offset", lost)
    links = {role: _Link(role) for role in ("task", "calibrator")}
    resident._probe_context(_job("baseline"), links, ResidentOrder(kind="job", seq=1))
    assert links["task"].context_offset_ms == 0.0
    assert links["task"].sent == [QuitRequest()]


def test_jobs_that_time_nothing_on_a_gpu_measure_nothing(monkeypatch):
    monkeypatch.setattr(resident, "context_offset", pytest.fail)
    for job in (_job("eval", "cpu"), _job("lint")):
        links = {role: _Link(role) for role in ("candidate", "task")}
        resident._probe_context(job, links, ResidentOrder(kind="job", seq=1))
        assert all(link.sent == [] for link in links.values())


# -- the process's side: null calls, then its job --------------------------------------------


class _NullCalls:
    served: ClassVar[list[str]] = []

    def __init__(self, device) -> None:
        pass

    def serve(self, channel: Channel) -> bool:
        request, _ = channel.receive(request_adapter)
        _NullCalls.served.append(request.op)
        return isinstance(request, QuitRequest)


@pytest.mark.parametrize(("role", "probed"), [("candidate", True), ("task", False)])
def test_the_timed_process_serves_null_calls_before_it_receives_its_job(monkeypatch, role, probed):
    monkeypatch.setattr("adaexplore_mcp.judge.subject.null.NullCalls", _NullCalls)
    _NullCalls.served = []
    ours, theirs = socket.socketpair()
    trusted = Channel(ours)
    if probed:
        trusted.send(QuitRequest())
    trusted.send(HandedJob(job=_job("eval").model_copy(update={"code": "x = 1"})))
    job = processes.await_job(Channel(theirs), role, _job("eval"), device=None)
    assert job is not None and job.code == "x = 1"
    assert _NullCalls.served == (["quit"] if probed else [])


def test_a_process_let_go_during_its_null_calls_gets_no_job(monkeypatch):
    monkeypatch.setattr("adaexplore_mcp.judge.subject.null.NullCalls", _NullCalls)
    ours, theirs = socket.socketpair()
    ours.close()
    monkeypatch.setattr(_NullCalls, "serve", lambda self, channel: False)
    assert processes.await_job(Channel(theirs), "task", _job("baseline"), device=None) is None
