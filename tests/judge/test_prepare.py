"""Before its job, a set of processes makes its CUDA contexts when its trusted process says so
(on a GPU it holds the lock shared meanwhile, so no context is made while another evaluation
times)."""

from __future__ import annotations

import socket
import threading
import time

from adaexplore_mcp.judge.trusted.main import prepare
from adaexplore_mcp.judge.wire.frames import Channel
from adaexplore_mcp.judge.wire.jobs import ChildJob, DevicePrepared, prepare_adapter
from adaexplore_mcp.judge.worker.processes import prepare_device

TEMPLATE = ChildJob(kind="eval", device="cpu")


def _pair() -> tuple[Channel, Channel]:
    ours, theirs = socket.socketpair()
    return Channel(ours), Channel(theirs)


def test_the_trusted_process_waits_until_every_process_has_its_device():
    trusted_ends, subject_ends = zip(*(_pair() for _ in range(3)), strict=True)
    answered: list[float] = []

    def subject(channel: Channel, delay: float) -> None:
        channel.receive(prepare_adapter, timeout_s=5)
        time.sleep(delay)
        answered.append(time.monotonic())
        channel.send(DevicePrepared())

    threads = [
        threading.Thread(target=subject, args=(end, 0.1 * i)) for i, end in enumerate(subject_ends)
    ]
    for thread in threads:
        thread.start()
    prepare(TEMPLATE, dict(zip(("candidate", "task", "calibrator"), trusted_ends, strict=True)))
    returned = time.monotonic()
    for thread in threads:
        thread.join()
    assert len(answered) == 3 and returned >= max(answered)


def test_a_process_that_is_gone_does_not_hold_up_the_others():
    gone_trusted, gone_subject = _pair()
    gone_subject.close()
    trusted_end, subject_end = _pair()
    thread = threading.Thread(target=prepare_device, args=(subject_end, "cpu"))
    thread.start()
    began = time.monotonic()
    prepare(TEMPLATE, {"candidate": gone_trusted, "task": trusted_end})
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - began < 5
