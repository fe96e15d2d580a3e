"""A span's inputs (``trusted.staging``): laid out in the memory the subject lent, written in
call by call, and the calibration's copies the same copies into the null subject's memory."""

from __future__ import annotations

import itertools

import torch

from adaexplore_mcp.judge.trusted.staging import SpanInputs
from adaexplore_mcp.judge.wire.ipc import _Filled


class HostArena(_Filled):
    """Lent memory as the trusted process sees it, here in host memory."""

    def __init__(self, handle: str, nbytes: int) -> None:
        self.handle, self.size, self.used = handle, nbytes, 0
        self.bytes = torch.zeros(nbytes, dtype=torch.uint8)


class Lender:
    """The part of a ``Link`` that staging uses: memory the other process lends."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.lent: list[HostArena] = []

    def borrow_arena(self, nbytes: int) -> HostArena:
        arena = HostArena(f"{self.role}-{len(self.lent)}", max(nbytes, 1 << 20))
        self.lent.append(arena)
        return arena


def input_sets(calls: int) -> list[list[object]]:
    """Sets of two tensors and a number, each set's bytes its own; sized so the arena's ranges
    are not whole multiples of the alignment."""
    return [
        [
            torch.full((300_000,), call + 1, dtype=torch.float32),
            torch.arange(1000, dtype=torch.int64) + call,
            0.5,
        ]
        for call in range(calls)
    ]


def staged(calls: int) -> tuple[SpanInputs, Lender, Lender, list[tuple[int, int]]]:
    subject, null = Lender("subject"), Lender("null")
    inputs = SpanInputs(subject, null, torch.device("cpu"))  # type: ignore[arg-type]
    _, _, ranges = inputs.stage(input_sets(calls))
    return inputs, subject, null, ranges


def test_the_sets_tile_the_subjects_arena_and_go_in_call_by_call():
    inputs, subject, _, ranges = staged(4)
    arena = subject.lent[-1]
    assert ranges[0][0] == 0 and all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    assert ranges[-1][1] <= arena.size
    assert not arena.bytes.any()  # nothing is written before the span
    inputs.fill(*ranges[0])
    assert arena.bytes[:4].view(torch.float32).item() == 1.0
    assert not arena.bytes[ranges[1][0] :].any()  # the next call's inputs do not exist yet
    for start, end in ranges[1:]:
        inputs.fill(start, end)
    assert not inputs.modified(ranges[-1][1])


def test_the_calibration_copies_the_same_bytes_to_the_same_places():
    """Copies over one set's worth of the null subject's memory, again and again, cost less
    than the span's over the whole arena (cross_entropy_rows on an H200: up to 0.31 ms a span,
    charged to the candidate as work done behind closed gates)."""
    inputs, subject, null, ranges = staged(5)
    arena, calibration = subject.lent[-1], null.lent[-1]
    assert calibration.size == arena.size
    for start, end in ranges:
        inputs.fill(start, end)
        inputs.fill(start, end, calibrating=True)
    used = ranges[-1][1]
    assert torch.equal(calibration.bytes[:used], arena.bytes[:used])


def test_the_null_subjects_memory_grows_with_the_subjects():
    inputs, subject, null, _ = staged(2)
    inputs.stage(input_sets(6))
    assert len(subject.lent) == len(null.lent) == 2
    assert null.lent[-1].size == subject.lent[-1].size
