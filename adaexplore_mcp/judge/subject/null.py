"""Null calls: a gated span whose every call is one tiny kernel, served by judge code alone.

The null subject serves them for the whole life of its worker (``trusted.calibrator``); the
process whose forward a job times serves them too, once, before it is handed its job
(``trusted.context_probe``): nothing of the user's is loaded in it then, so what its context's
handoff reads is the GPU's, not the user's.
"""

from __future__ import annotations

import torch

from adaexplore_mcp.judge.subject.server import Codec, Server
from adaexplore_mcp.judge.wire.frames import Channel
from adaexplore_mcp.judge.wire.subject import Answer, ArmRequest, Signals


class NullCalls:
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.codec = Codec(device)
        self._counter = torch.zeros(1, device=device)
        self._tick([])  # its kernel loaded now, not behind a closed gate
        torch.cuda.synchronize(device)

    def _tick(self, args: list) -> None:
        self._counter.add_(1)

    def serve(self, channel: Channel) -> bool:
        """Null spans until the trusted process quits (True) or closes the channel (False);
        then nothing of them is left running, and their arenas are unmapped."""
        server = Server(channel, self.codec, {})

        def arm(request: ArmRequest, payload: bytes) -> tuple[Answer, bytes]:
            return server.arm(request, payload, self._tick, Signals())

        server.handlers["arm"] = arm
        try:
            return server.serve()
        finally:
            torch.cuda.synchronize(self.device)
            self.codec.forget()
