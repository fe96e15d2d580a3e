"""One gate for the functions the judge keeps from the candidate (the profiler's switches, the
dispatcher's entry points past the Python key, the import machinery's renaming)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn


def gate(
    original: Callable[..., Any],
    allowed: Callable[[tuple], bool],
    refuse: Callable[[], NoReturn],
) -> Callable[..., Any]:
    """``original`` behind a gate: called while ``allowed(args)`` holds, else ``refuse()``
    raises. The original is a positional-only default of a function the gate's closure holds:
    whoever reaches it cannot call it without the original, and the audit hook refuses reading a
    function's defaults (a closure cell, which no audit event covers, once held the original
    itself and let a kernel call it)."""

    def check(args, kwargs, call=original, allowed=allowed, refuse=refuse, /):
        if allowed(args):
            return call(*args, **kwargs)
        refuse()

    def gated(*args: Any, **kwargs: Any) -> Any:
        return check(args, kwargs)

    return gated
