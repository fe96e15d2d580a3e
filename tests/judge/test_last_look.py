"""The server's last look before an answer leaves the candidate's process
(``candidate.last_look``): on a replacement it sends its own prepared answer and ends the
process, whatever else the kernel has replaced on the way out."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

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


HELD_BACK = textwrap.dedent(
    """
    import os, tempfile, torch
    from adaexplore_mcp.judge.candidate.signals import Monitor

    workdir = tempfile.mkdtemp()
    kernel = os.path.join(workdir, "kernel.py")
    open(kernel, "w").close()
    monitor = Monitor(kernel_path=kernel, workdir=workdir, device=torch.device("cpu"))
    monitor.install(audit=False)  # the integrity checks off: no server's last look
    for _ in range(5):
        with monitor.call("check"):
            pass
    print(len(monitor.kept))
    """
)


def test_what_is_held_back_for_the_last_look_does_not_pile_up_without_one():
    """With the integrity checks off there is no last look to let go of what each call held
    back (the warning filters): it grew by one a call, for every call of the process."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run(
        [sys.executable, "-c", HELD_BACK], capture_output=True, text=True, timeout=240, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) <= 1, done.stdout
