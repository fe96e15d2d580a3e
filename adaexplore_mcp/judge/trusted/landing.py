"""Where a timed span's outputs land: call by call, byte for byte, in memory set aside before
the span.

Nothing inside a span may wait for the GPU: the hold (``trusted.hold``) keeps it busy until the
host has enqueued the whole span, so an allocation that has to free cached memory, or a copy
kernel loaded on its first use, would wait for a GPU that waits for the host. A ``clone`` of
each output may do either. So the trusted process sets a buffer aside before the span, copies
each call's output storages into it with plain device-to-device copies (nothing to allocate,
no kernel of its own to load), and makes the tensors once the span is over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from adaexplore_mcp.judge.wire.ipc import Shared, aligned, mapped


@dataclass(frozen=True)
class Landed:
    """A shared tensor and where its storage's bytes are copied."""

    shared: Shared
    target: torch.Tensor  # uint8, a slice of the landing buffer


class Landing:
    """A buffer of this process's for a span's outputs, kept from span to span."""

    def __init__(self) -> None:
        self._buffer: torch.Tensor | None = None
        self.per_call_bytes = 0  # the most one call's outputs have taken so far

    def reserve(self, calls: int, device: torch.device) -> None:
        """Room for ``calls`` calls as large as the largest seen (before the span's hold)."""
        needed = calls * self.per_call_bytes
        if needed and (self._buffer is None or self._buffer.numel() < needed):
            self._buffer = None  # freed before its successor is allocated
            self._buffer = torch.empty(needed, dtype=torch.uint8, device=device)

    def place(self, views: list[list[Any]]) -> list[list[Any]] | None:
        """Each call's outputs (from ``CopyingDecoder.view_all``) with every shared tensor
        given its place in the buffer; None when they do not fit (nothing else is changed)."""
        sizes = [_bytes(outputs) for outputs in views]
        self.per_call_bytes = max([self.per_call_bytes, *sizes])
        capacity = 0 if self._buffer is None else self._buffer.numel()
        if sum(sizes) > capacity:
            return None
        buffer, offset = self._buffer, 0

        def land(shared: Shared) -> Landed:
            nonlocal offset
            nbytes = shared.storage.numel()
            if not nbytes:  # nothing to copy, and perhaps nothing set aside
                return Landed(shared, shared.storage[:0])
            assert buffer is not None  # its bytes were counted against the buffer's
            target = buffer[offset : offset + nbytes]
            offset += aligned(nbytes)
            return Landed(shared, target)

        return [mapped(outputs, Shared, land) for outputs in views]

    @staticmethod
    def copy(outputs: list[Any]) -> None:
        """One call's placed outputs copied into the buffer (enqueued on the current stream)."""
        for landed in _leaves(outputs):
            landed.target.copy_(landed.shared.storage)

    @staticmethod
    def extents(outputs: list[Any]) -> list[tuple[int, int]]:
        """The device memory one call's placed outputs live in, as (start, end) addresses."""
        return [
            (landed.shared.storage.data_ptr(), landed.shared.storage.data_ptr() + nbytes)
            for landed in _leaves(outputs)
            if (nbytes := landed.shared.storage.numel())
        ]

    @staticmethod
    def tensors(outputs: list[Any]) -> list[Any]:
        """One call's outputs as tensors of their own, made from what was copied (after the
        span, on the stream that copied them)."""
        return mapped(outputs, Landed, lambda landed: landed.shared.tensor(landed.target))


def _bytes(value: Any) -> int:
    if isinstance(value, Shared):
        return aligned(value.storage.numel())
    if isinstance(value, list | tuple):
        return sum(_bytes(item) for item in value)
    return 0


def _leaves(value: Any) -> list[Landed]:
    if isinstance(value, Landed):
        return [value]
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in _leaves(item)]
    return []
