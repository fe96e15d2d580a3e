"""The server's last look before an answer leaves the candidate's process
(``candidate.last_look``): on a replacement it sends its own prepared answer and ends the
process, whatever else the kernel has replaced on the way out."""

from __future__ import annotations

import os
import socket

from adaexplore_mcp.judge.candidate.last_look import last_look
from adaexplore_mcp.judge.wire.frames import Channel
from adaexplore_mcp.judge.wire.subject import ErrorAnswer, answer_adapter


def test_nothing_replaced_lets_the_answer_go():
    ours, theirs = socket.socketpair()
    with ours:
        last_look(lambda: None, theirs, [])()  # returns: the server sends its own answer next
        theirs.close()
        assert ours.recv(1) == b""  # nothing was sent before the end


def test_a_replacement_is_told_on_the_socket_and_ends_the_process():
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the candidate's side: a kernel has also replaced the channel's send
        ours.close()
        Channel.send = lambda *args, **kwargs: None  # type: ignore[method-assign]
        last_look(lambda: 'torch.autograd.profiler.profile.config"}', theirs, [])()
        os._exit(3)  # not reached: the look ends the process itself
    theirs.close()
    _, status = os.waitpid(pid, 0)
    with ours:
        answer, _ = Channel(ours).receive(answer_adapter, timeout_s=5)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert isinstance(answer, ErrorAnswer)
    (event,) = answer.signals.audit
    assert event.check == "harness_tampering"
    # the name as the watch gives it, with nothing of it that could break the answer's JSON
    assert event.detail.startswith("torch.autograd.profiler.profile.config was replaced")
    assert answer.error.type == "HarnessTampering"


def test_what_the_judge_held_back_is_let_go_before_the_look():
    """A finalizer of the kernel's in what the judge lets go of runs before the look, which then
    sees what it replaced (it ran between the judge's looks, and armed a replacement that put
    itself back before the next)."""
    replaced: list[str] = []

    class Arming:
        def __del__(self) -> None:
            replaced.append("torch.profiler.profile")

    ours, theirs = socket.socketpair()
    kept: list[object] = [[Arming()]]
    pid = os.fork()
    if pid == 0:
        ours.close()
        last_look(lambda: replaced[0] if replaced else None, theirs, kept)()
        os._exit(3)  # not reached: the finalizer armed what the look then found
    theirs.close()
    _, status = os.waitpid(pid, 0)
    with ours:
        answer, _ = Channel(ours).receive(answer_adapter, timeout_s=5)
    assert os.WEXITSTATUS(status) == 0 and isinstance(answer, ErrorAnswer)
    assert answer.signals.audit[0].detail.startswith("torch.profiler.profile was replaced")
