"""What the trusted process measures with: a stream of its own, an L2 flush, the copy bandwidth
and the hold through a subject's arming (``trusted.hold``)."""

from __future__ import annotations

import math

import torch

from adaexplore_mcp.judge.settings import TimingSettings
from adaexplore_mcp.judge.trusted.hold import Hold


class Gpu:
    """What this process measures with: a stream of its own, an L2 flush and the hold."""

    def __init__(self, settings: TimingSettings) -> None:
        self.device = torch.device("cuda", 0)
        props = torch.cuda.get_device_properties(self.device)
        l2_bytes = getattr(props, "L2_cache_size", 0) or 64 * 2**20
        self.total_memory = props.total_memory
        self.flush_buffer = torch.empty(
            int(l2_bytes * settings.l2_flush_factor) // 4, dtype=torch.int32, device=self.device
        )
        self.stream = torch.cuda.Stream(self.device)
        self.side = torch.cuda.Stream(self.device)
        self._warm()
        self.hold = Hold(self.device, self.stream)

    def _warm(self) -> None:
        """Load this process's own kernels now: a kernel loaded lazily inside a span would keep
        the GPU idle there while the host loads it."""
        scratch = torch.zeros(1024, dtype=torch.uint8, device=self.device)
        with torch.cuda.stream(self.stream):
            torch.bitwise_or(scratch, 0, out=scratch)
            self.flush()
            event = torch.cuda.Event(enable_timing=True)
            event.record()
        torch.cuda.synchronize(self.device)

    def flush(self) -> None:
        self.flush_buffer.zero_()

    def bandwidth(self, size_mb: int = 256) -> float:
        """Bytes per second the GPU copies device to device, best of a few runs: the fastest any
        kernel can read its inputs."""
        count = size_mb * 2**20 // 4
        source = torch.empty(count, dtype=torch.int32, device=self.device)
        target = torch.empty_like(source)
        target.copy_(source)
        best_s = math.inf
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            target.copy_(source)
            end.record()
            end.synchronize()
            best_s = min(best_s, start.elapsed_time(end) / 1e3)
        return 2 * count * 4 / best_s
