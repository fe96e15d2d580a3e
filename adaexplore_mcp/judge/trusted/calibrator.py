"""The null subject: a trusted process (no user code) that answers timed spans with one tiny
kernel, so that the trusted process can measure the GPU's handoff between two processes'
contexts next to every span it times (``trusted.timing``).

It lives as long as the trusted process it serves (``trusted.resident``): each job begins with
its ready answer and ends with a quit, after which it unmaps that job's arenas."""

from __future__ import annotations

from collections.abc import Callable

import torch

from adaexplore_mcp.judge.subject.loading import describe_platform, start_device
from adaexplore_mcp.judge.subject.server import Codec, Server
from adaexplore_mcp.judge.wire.frames import Channel, ChannelClosed
from adaexplore_mcp.judge.wire.subject import Answer, ArmRequest, Signals


def serve(channel: Channel) -> None:
    device = start_device("cuda")
    counter = torch.zeros(1, device=device)

    def tick(args: list) -> None:
        counter.add_(1)

    tick([])  # its kernel loaded now, not behind a closed gate
    torch.cuda.synchronize(device)
    serve_jobs(channel, device, tick)


def serve_jobs(channel: Channel, device: torch.device, tick: Callable[[list], None]) -> None:
    """Job after job, each begun with this process's platform, until the trusted process quits
    or goes away: between two jobs is how a judge that closes leaves it, and is no error."""
    platform = describe_platform(device)

    def arm(request: ArmRequest, payload: bytes) -> tuple[Answer, bytes]:
        return server.arm(request, payload, tick, Signals())

    codec = Codec(device)
    server = Server(channel, codec, {"arm": arm})
    while True:
        try:
            channel.send(platform)
        except ChannelClosed:
            return
        if not server.serve():
            return
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # nothing of the job's left running on its arenas
        codec.forget()
