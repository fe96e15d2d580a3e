"""A span's inputs: laid out in the memory the subject lent (``LendRequest``), their bytes
staged in this process's memory, written into the lent memory only inside the span, call by
call (``trusted.timing``), and compared with what was written after it."""

from __future__ import annotations

from typing import Any

import torch

from adaexplore_mcp.judge.trusted.link import Link
from adaexplore_mcp.judge.wire.ipc import LentArena, aligned, storage_bytes
from adaexplore_mcp.judge.wire.values import Encoder, PayloadEncoder, TensorValue, Value, describe


class _LayoutEncoder(Encoder):
    """Places the span device's tensors in an arena's layout without copying them: their
    storage bytes go to a staging buffer of this process first, and into the arena only inside
    the span. Other tensors (the host's) travel in the payload."""

    def __init__(self, arena: LentArena, device: torch.device) -> None:
        self.arena, self.device_type = arena, device.type
        self.payload = PayloadEncoder()
        self.placed: list[tuple[int, Any]] = []

    def tensor(self, tensor) -> TensorValue:
        if tensor.device.type != self.device_type:
            return self.payload.tensor(tensor)
        nbytes = tensor.untyped_storage().nbytes()
        start = self.arena.reserve(nbytes)
        self.placed.append((start, tensor))
        return describe(tensor, "cuda", ipc=self.arena.handle, alloc_offset=start)


def set_bytes(values: list[Any], device_type: str = "cuda") -> int:
    """The arena bytes one input set's tensors of ``device_type`` take."""
    total = 0
    for value in values:
        if isinstance(value, torch.Tensor) and value.device.type == device_type:
            total += aligned(value.untyped_storage().nbytes())
        elif isinstance(value, list | tuple):
            total += set_bytes(list(value), device_type)
    return total


class SpanInputs:
    """The subject's input arena and this process's staging copy of it; the null subject's
    arena, of the same size, which the calibration's copies go into at the same offsets.

    The calibration's copies must cost what the span's cost, or the difference is charged to
    the candidate as GPU time its context took with its gates closed. Written over one set's
    worth of memory again and again, they did not: on an H200, cross_entropy_rows (71 MiB a
    call) read 0.15-0.31 ms a span of copy excess, and 1.10-1.25x do_bench."""

    def __init__(self, subject: Link, calibrator: Link, device: torch.device) -> None:
        self.subject, self.calibrator, self.device = subject, calibrator, device
        self._arena: LentArena | None = None
        self._null: LentArena | None = None  # the calibration's, lent by the null subject
        self._staging: torch.Tensor | None = None

    def modified(self, used: int) -> bool:
        """Whether the subject wrote into its inputs: compared 8 bytes at a time (torch's
        comparison makes a flag per element, 3-4 ms a span byte by byte on an H200)."""
        assert self._arena is not None and self._staging is not None
        words = used // 8 * 8
        staged, lent = self._staging, self._arena.bytes
        return not (
            torch.equal(staged[:words].view(torch.int64), lent[:words].view(torch.int64))
            and torch.equal(staged[words:used], lent[words:used])
        )

    def stage(
        self, sets: list[list[Any]]
    ) -> tuple[list[list[Value]], bytes, list[tuple[int, int]]]:
        """Lay the sets out in the subject's input arena, their bytes in a staging buffer; each
        set's range of the arena (its padding included, so the ranges tile it)."""
        needed = sum(set_bytes(values, self.device.type) for values in sets)
        if self._arena is None or self._arena.size < needed:
            self._arena = self.subject.borrow_arena(needed)
            self._staging = torch.empty(self._arena.size, dtype=torch.uint8, device=self.device)
        if self._null is None or self._null.size < self._arena.size:
            self._null = self.calibrator.borrow_arena(self._arena.size)
        self._arena.reset()
        layout = _LayoutEncoder(self._arena, self.device)
        calls, ranges = [], []
        for values in sets:
            start = self._arena.used
            calls.append(layout.encode_all(values))
            ranges.append((start, self._arena.used))
        assert self._staging is not None
        for start, tensor in layout.placed:
            source = storage_bytes(tensor)
            self._staging[start : start + source.numel()].copy_(source)
        return calls, layout.payload.payload(), ranges

    def fill(self, start: int, end: int, *, calibrating: bool = False) -> None:
        """Bytes of the inputs into the subject's arena, with a kernel of this process's (an SM
        copy). Calibrating, into the same range of the null subject's own memory: the subject
        sees nothing of the calibration, so none of its work can start on a word written
        there."""
        assert self._arena is not None and self._staging is not None
        if end <= start:
            return
        arena = self._null if calibrating else self._arena
        assert arena is not None
        torch.bitwise_or(self._staging[start:end], 0, out=arena.bytes[start:end])
