"""The null subject: a trusted process (no user code) that answers timed spans with one tiny
kernel, so that the trusted process can measure the GPU's handoff between two processes'
contexts next to every span it times (``trusted.timing``).

It lives as long as the trusted process it serves (``trusted.resident``): each job begins with
its ready answer and ends with a quit, after which it unmaps that job's arenas."""

from __future__ import annotations

from adaexplore_mcp.judge.subject.loading import describe_platform, start_device
from adaexplore_mcp.judge.subject.null import NullCalls
from adaexplore_mcp.judge.wire.frames import Channel


def serve(channel: Channel) -> None:
    null = NullCalls(start_device("cuda"))
    platform = describe_platform(null.device)
    while True:
        channel.send(platform)
        if not null.serve(channel):
            return
