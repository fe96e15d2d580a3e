"""The op recorder's count of tensor subclasses: only a subclass with a ``__torch_dispatch__``
of its own runs Python out of the recorder's sight."""

from __future__ import annotations

import torch

from adaexplore_mcp.judge.candidate.recorder import OpRecorder, glue_overloads


class _Dispatching(torch.Tensor):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _counts(*types: type) -> dict[str, int]:
    counts: dict[str, int] = {}
    recorder = OpRecorder(counts, [0], glue_overloads())
    x = torch.ones(3)
    recorder.__torch_dispatch__(torch.ops.aten.clone.default, types, (x,))
    return counts


def test_a_subclass_with_its_own_dispatch_is_counted() -> None:
    assert _counts(_Dispatching) == {"_Dispatching (a tensor subclass)": 1}


def test_plain_tensors_and_parameters_are_not_subclasses() -> None:
    # on a GPU, dispatch names torch.Tensor itself among the types of some calls: every
    # bundled solution was rejected as computing "with a tensor subclass"
    assert _counts(torch.Tensor) == {}
    assert _counts(torch.nn.Parameter, torch.Tensor) == {}
