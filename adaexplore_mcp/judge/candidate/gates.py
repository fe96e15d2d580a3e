"""One gate for the functions the judge keeps from the candidate (the profiler's switches, the
dispatcher's entry points past the Python key, the import machinery's renaming)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from adaexplore_mcp.judge.candidate.sealing import sealed_entry
from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``


def gate(
    original: Callable[..., Any],
    allowed: Callable[[tuple], bool],
    refuse: Callable[[], NoReturn],
) -> Callable[..., Any]:
    """``original`` behind a gate: called while ``allowed(args)`` holds, else ``refuse()``
    raises. The original is a positional-only default of the gate's check, itself a default of
    the gate; both are sealed (``sealing.sealed_entry``): whoever reaches the gate cannot call
    the original without reading a function's defaults, which the audit hook refuses (a closure
    cell, which no audit event covers, once held the original itself and let a kernel call
    it)."""
    return sealed_entry(_check, original, allowed, refuse)


def _check(args, kwargs, call, allowed, refuse, /):
    if allowed(args):
        return call(*args, **kwargs)
    refuse()
