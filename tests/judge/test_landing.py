"""A timed span's outputs land byte for byte in memory set aside before the span
(``trusted.landing``): each call's as it was when it was copied, in the layout it was sent."""

from __future__ import annotations

import torch

from adaexplore_mcp.judge.trusted.landing import Landing
from adaexplore_mcp.judge.wire.ipc import ALIGN, Shared
from adaexplore_mcp.judge.wire.values import describe


def shared(tensor: torch.Tensor) -> Shared:
    """``tensor`` as the trusted process sees it in another process's memory: its storage's
    bytes and how it lies in them."""
    storage = torch.empty(0, dtype=torch.uint8).set_(tensor.untyped_storage())
    return Shared(storage, describe(tensor, "cuda", ipc="00", alloc_offset=0))


def call_outputs(scale: float) -> tuple[list, list[torch.Tensor]]:
    """A call's outputs as described: a transposed view, and a tuple of a float16 tensor and a
    number; with the tensors whose memory they are."""
    block = torch.arange(12.0).reshape(3, 4) * scale
    half = torch.full((5,), scale, dtype=torch.float16)
    return [shared(block.t()), (shared(half), 7)], [block, half]


def test_each_call_lands_as_it_was_when_copied_in_the_layout_it_was_sent():
    first, first_memory = call_outputs(1.0)
    second, second_memory = call_outputs(2.0)
    landing = Landing()
    assert landing.place([first, second]) is None  # nothing set aside yet: copied late
    landing.reserve(2, torch.device("cpu"))
    placed = landing.place([first, second])
    assert placed is not None
    Landing.copy(placed[0])
    Landing.copy(placed[1])
    for memory in first_memory + second_memory:  # written after the copies
        memory.fill_(-1)
    made = [Landing.tensors(outputs) for outputs in placed]
    assert torch.equal(made[0][0], torch.arange(12.0).reshape(3, 4).t())
    assert torch.equal(made[1][0], 2 * torch.arange(12.0).reshape(3, 4).t())
    assert made[1][1][0].dtype == torch.float16 and torch.equal(
        made[1][1][0], torch.full((5,), 2.0, dtype=torch.float16)
    )
    assert isinstance(made[0][1], tuple) and made[0][1][1] == 7
    targets = [placed[0][0].target, placed[0][1][0].target, placed[1][0].target]
    assert all(target.storage_offset() % ALIGN == 0 for target in targets)  # any dtype's view


def test_outputs_larger_than_the_memory_set_aside_are_left_to_be_copied_after_the_span():
    small, _ = call_outputs(1.0)
    landing = Landing()
    landing.place([small])
    landing.reserve(1, torch.device("cpu"))
    large = [shared(torch.zeros(1024))]
    assert landing.place([large]) is None
    landing.reserve(1, torch.device("cpu"))  # the next span sets aside as much
    assert landing.place([large]) is not None


def test_empty_outputs_land_with_nothing_set_aside():
    """A call that returns empty tensors needs no room: its outputs are placed (and made empty)
    even before anything has been set aside, rather than failing the trusted process."""
    landing = Landing()
    placed = landing.place([[shared(torch.empty(0)), shared(torch.empty(0, 3))]])
    assert placed is not None
    Landing.copy(placed[0])
    made = Landing.tensors(placed[0])
    assert made[0].shape == (0,) and made[1].shape == (0, 3)
