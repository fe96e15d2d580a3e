"""What a user-code process says of the module it built: a fingerprint of each parameter and
buffer (``WeightPrint``), for the trusted process to tell an agent when ``ModelNew`` did not
build ``Model``'s weights. The task's process describes ``Model``, the candidate's ``ModelNew``;
the candidate's description is its own word and only ever adds a hint to a wrong result."""

from __future__ import annotations

import re
from itertools import islice
from typing import Any

import torch

from adaexplore_mcp.judge.own_builtins import own_builtins
from adaexplore_mcp.judge.wire.subject import MAX_PRINTS, TensorPrint, WeightPrint

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

_LISTED = 1 << 16  # tensors counted at most, of each kind
_CHUNK = 1 << 24  # elements summed at a time: a float64 copy of a huge weight would not fit


def fingerprint(model: Any) -> WeightPrint | None:
    """The module's parameters, then its buffers, as the module lists them. None where it is no
    module, or listing or summing them failed (user code may override either)."""
    if not isinstance(model, torch.nn.Module):
        return None
    try:
        with torch.no_grad():
            # bounded: user code may list its tensors without end
            named: list[tuple[str, torch.Tensor, bool]] = [
                (n, t, False) for n, t in islice(model.named_parameters(), _LISTED)
            ]
            named += [(n, t, True) for n, t in islice(model.named_buffers(), _LISTED)]
            listed = [entry for entry in named if isinstance(entry[1], torch.Tensor)]
            sums = [_sums(tensor) for _, tensor, _ in listed[:MAX_PRINTS]]
        tensors = [
            TensorPrint(
                name=_clean(name),
                buffer=buffer,
                shape=list(tensor.shape)[:16],
                dtype=str(tensor.dtype).removeprefix("torch."),
                sum=total,
                sum_sq=squares,
            )
            for (name, tensor, buffer), (total, squares) in zip(listed, sums, strict=False)
        ]
        return WeightPrint(tensors=tensors, count=len(listed))
    except BaseException:  # a module whose listing raises is described by no hint, not an error
        return None


def _sums(tensor: torch.Tensor) -> tuple[float, float]:
    flat = tensor.detach().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    total = torch.zeros((), dtype=torch.float64, device=flat.device)
    squares = torch.zeros((), dtype=torch.float64, device=flat.device)
    for chunk in flat.split(_CHUNK):
        wide = chunk.to(torch.float64)
        total += wide.sum()
        squares += wide.square().sum()
    total_value, squares_value = torch.stack([total, squares]).tolist()
    return total_value, squares_value


def _clean(name: str) -> str:
    """A module may register any name but one with a dot; what crosses is a plain name."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", name)[:200] or "_"
