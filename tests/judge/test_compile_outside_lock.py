"""A Triton compile runs while the trusted process lets the GPU lock go: the candidate's side
(its compile hook and its notes) and the trusted side (its link), over a real socket."""

from __future__ import annotations

import socket
import threading
from types import SimpleNamespace

import pytest
import torch
import triton.compiler

from adaexplore_mcp.judge.candidate.harness import CandidateSubject
from adaexplore_mcp.judge.candidate.launchers import wrap_compiler
from adaexplore_mcp.judge.trusted.link import Link, SubjectLost
from adaexplore_mcp.judge.wire.frames import Channel
from adaexplore_mcp.judge.wire.subject import (
    CallAnswer,
    CallRequest,
    CompileNote,
    ResumeRequest,
    answer_adapter,
    request_adapter,
)


class FakeKernel:
    def __init__(self) -> None:
        self.handles = 0

    def _init_handles(self) -> None:
        self.handles += 1


def test_compiles_run_through_the_gate_only_while_it_is_set(monkeypatch):
    compiled: list[tuple] = []

    def fake_compile(*args, **kwargs):
        compiled.append(args)
        return FakeKernel()

    monkeypatch.setattr(triton.compiler, "compile", fake_compile)
    gate: list = [None]
    wrap_compiler(gate)
    plain = triton.compiler.compile("src")
    assert compiled == [("src",)] and plain.handles == 0

    through: list[str] = []

    def outside(compile):
        through.append("before")
        kernel = compile()
        through.append("after")
        return kernel

    gate[0] = outside
    kernel = triton.compiler.compile("other")
    assert through == ["before", "after"] and compiled[-1] == ("other",)
    assert kernel.handles == 1  # launcher built and module loaded before the lock is taken back


def test_the_candidate_says_when_a_compile_starts_and_ends_and_waits_to_resume():
    ours, theirs = socket.socketpair()
    trusted, candidate = Channel(ours), Channel(theirs)
    order: list[str] = []

    def compile_():
        order.append("compiled")
        return "kernel"

    shell = SimpleNamespace(channel=candidate)
    done = threading.Event()
    result: list = []

    def run() -> None:
        result.append(CandidateSubject._outside_lock(shell, compile_))  # type: ignore[arg-type]
        order.append("resumed")
        done.set()

    thread = threading.Thread(target=run)
    thread.start()
    first, _ = trusted.receive(answer_adapter, timeout_s=5)
    second, _ = trusted.receive(answer_adapter, timeout_s=5)
    assert first == CompileNote(done=False) and second == CompileNote(done=True)
    assert order == ["compiled"] and not done.wait(0.2)  # no launch before the lock is back
    trusted.send(ResumeRequest())
    assert done.wait(5) and result == ["kernel"] and order == ["compiled", "resumed"]
    thread.join()


def _link_and_subject() -> tuple[Link, Channel]:
    ours, theirs = socket.socketpair()
    return Link("candidate", Channel(ours), torch.device("cpu"), set()), Channel(theirs)


def test_the_trusted_side_hears_the_notes_of_a_call_that_allows_them():
    link, subject = _link_and_subject()
    subject.send(CompileNote(done=False))
    subject.send(CompileNote(done=True))
    subject.send(CallAnswer(outputs=[]))
    heard: list[bool] = []
    answer, _ = link.ask(
        CallRequest(variant="main", args=[], compile_notes=True),
        expect=CallAnswer,
        on_note=lambda note: heard.append(note.done),
    )
    assert heard == [False, True] and isinstance(answer, CallAnswer)
    request, _ = subject.receive(request_adapter, timeout_s=5)
    assert request.compile_notes


def test_a_note_out_of_turn_is_a_broken_protocol():
    link, subject = _link_and_subject()
    subject.send(CompileNote(done=False))
    with pytest.raises(SubjectLost) as lost:
        link.ask(CallRequest(variant="main", args=[]), expect=CallAnswer)
    assert lost.value.garbled
