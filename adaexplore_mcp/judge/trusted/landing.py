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

from adaexplore_mcp.judge.wire.ipc import ALIGN, Shared


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
        placed, offset = [], 0
        for outputs in views:
            laid, offset = _lay(outputs, self._buffer, offset)
            placed.append(laid)
        return placed

    @staticmethod
    def copy(outputs: list[Any]) -> None:
        """One call's placed outputs copied into the buffer (enqueued on the current stream)."""
        for landed in _leaves(outputs):
            landed.target.copy_(landed.shared.storage)

    @staticmethod
    def tensors(outputs: list[Any]) -> list[Any]:
        """One call's outputs as tensors of their own, made from what was copied (after the
        span, on the stream that copied them)."""
        return _made(outputs)


def _aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGN) * ALIGN


def _bytes(value: Any) -> int:
    if isinstance(value, Shared):
        return _aligned(value.storage.numel())
    if isinstance(value, list | tuple):
        return sum(_bytes(item) for item in value)
    return 0


def _lay(value: Any, buffer: Any, offset: int) -> tuple[Any, int]:
    if isinstance(value, Shared):
        nbytes = value.storage.numel()
        return Landed(value, buffer[offset : offset + nbytes]), offset + _aligned(nbytes)
    if isinstance(value, list | tuple):
        items = []
        for item in value:
            laid, offset = _lay(item, buffer, offset)
            items.append(laid)
        return (tuple(items) if isinstance(value, tuple) else items), offset
    return value, offset


def _leaves(value: Any) -> list[Landed]:
    if isinstance(value, Landed):
        return [value]
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in _leaves(item)]
    return []


def _made(value: Any) -> Any:
    if isinstance(value, Landed):
        return value.shared.tensor(value.target)
    if isinstance(value, list | tuple):
        items = [_made(item) for item in value]
        return tuple(items) if isinstance(value, tuple) else items
    return value
