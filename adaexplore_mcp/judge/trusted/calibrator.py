"""The null subject: a trusted process (no user code) that answers timed spans with one tiny
kernel, so that the trusted process can measure the GPU's handoff between two processes'
contexts next to every span it times (``trusted.timing``)."""

from __future__ import annotations

import torch

from adaexplore_mcp.judge.subject.loading import describe_platform, start_device
from adaexplore_mcp.judge.subject.server import Codec, Server
from adaexplore_mcp.judge.wire.frames import Channel
from adaexplore_mcp.judge.wire.subject import Answer, ArmRequest, Signals


def serve(channel: Channel) -> None:
    device = start_device("cuda")
    counter = torch.zeros(1, device=device)

    def tick(args: list) -> None:
        counter.add_(1)

    tick([])  # its kernel loaded now, not behind a closed gate
    torch.cuda.synchronize(device)
    channel.send(describe_platform(device))

    def arm(request: ArmRequest, payload: bytes) -> tuple[Answer, bytes]:
        return server.arm(request, payload, tick, Signals())

    server = Server(channel, Codec(device), {"arm": arm})
    server.serve()
