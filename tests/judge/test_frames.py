"""A Channel reads frames from a candidate's process: what the candidate announces in a header
commits no memory of the trusted process until the bytes arrive, and real payloads arrive intact."""

from __future__ import annotations

import random
import socket
import threading
import tracemalloc

import pytest

from adaexplore_mcp.judge.wire.frames import HEADER, MAX_BODY, MAX_PAYLOAD, Channel, ChannelClosed
from adaexplore_mcp.judge.wire.subject import ValuesAnswer, answer_adapter


@pytest.mark.parametrize(
    "start",
    [
        HEADER.pack(2, MAX_PAYLOAD // 8) + b"{}" + bytes(1000),  # 1 GiB announced, 1000 bytes sent
        HEADER.pack(MAX_BODY, 0) + b"{",  # the largest body announced, one byte sent
    ],
    ids=["payload", "body"],
)
@pytest.mark.parametrize("then", ["closes", "sleeps"])
def test_a_frame_announced_but_not_sent_takes_no_memory(start, then):
    """A candidate that announces a large frame and then sleeps or leaves must not make the
    trusted process hold what it announced: memory is taken as the bytes arrive."""
    ours, theirs = socket.socketpair()
    channel = Channel(ours)
    theirs.sendall(start)
    if then == "closes":
        theirs.close()
    tracemalloc.start()
    try:
        with pytest.raises(ChannelClosed):
            channel.receive(answer_adapter, timeout_s=0.2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        ours.close()
        theirs.close()
    assert peak < 16 * 2**20


@pytest.mark.parametrize("size", [1, 4 * 2**20, 25 * 2**20 + 7])
@pytest.mark.parametrize("timeout_s", [None, 30.0])
def test_a_payload_of_many_mebibytes_arrives_intact(size, timeout_s):
    payload = random.Random(size).randbytes(size)
    ours, theirs = socket.socketpair()
    sender = threading.Thread(target=Channel(theirs).send, args=(ValuesAnswer(values=[]), payload))
    sender.start()
    try:
        answer, received = Channel(ours).receive(answer_adapter, timeout_s=timeout_s)
    finally:
        sender.join()
        ours.close()
        theirs.close()
    assert answer == ValuesAnswer(values=[])
    assert type(received) is bytes and received == payload
