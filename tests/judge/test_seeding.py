"""The user-code processes seed the generators they draw from as ``torch.manual_seed`` would,
without its cost: it formats a stack for every backend not started, on every call."""

from __future__ import annotations

import traceback

import pytest
import torch

from adaexplore_mcp.judge.subject.loading import seed

from . import CPU_AND_CUDA


@pytest.mark.parametrize("device", CPU_AND_CUDA)
def test_the_same_draws_as_torch_manual_seed(device):
    where = torch.device(device)
    torch.manual_seed(1234)
    expected = [torch.randn(64), torch.randn(64, device=where), torch.nn.Linear(8, 8).weight]
    seed(1234, where)
    drawn = [torch.randn(64), torch.randn(64, device=where), torch.nn.Linear(8, 8).weight]
    for want, got in zip(expected, drawn, strict=True):
        assert torch.equal(want, got)


def test_seeding_formats_no_stack(monkeypatch):
    """torch.manual_seed formatted a stack for each backend it could not seed yet: 2 ms a call
    in the task's process on an H100, ~80 calls an evaluation."""

    def refuse(*args, **kwargs):
        raise AssertionError("a stack was formatted")

    monkeypatch.setattr(traceback, "format_stack", refuse)
    seed(7, torch.device("cpu"))
    with pytest.raises(AssertionError, match="stack was formatted"):
        torch.manual_seed(7)
