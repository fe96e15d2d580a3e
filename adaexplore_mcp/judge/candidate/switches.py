"""The profiler's switches, kept for the judge's own profiler.

Any code in a process can pause the profiler's recording (``_toggle_collection_dynamic``),
turn off every operator record (``_enable_record_function``), remove the profiler's callbacks
(``_clear_callbacks``), or end a session and start another. A kernel did so around torch
work it also hid from the dispatch mode, and neither recorder saw it. Before the candidate's
module is imported each switch is replaced, in every namespace torch keeps it in, by one that
works only while the judge's own profiler starts or stops; called at any other time it refuses
and records ``harness_tampering``.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, NoReturn

from adaexplore_mcp.judge.candidate.gates import gate
from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

SWITCHES = (
    "_toggle_collection_dynamic",
    "_enable_record_function",
    "_prepare_profiler",
    "_enable_profiler",
    "_disable_profiler",
    "_enable_profiler_legacy",
    "_disable_profiler_legacy",
    "_clear_callbacks",  # every RecordFunction callback, the profiler's among them
    "_set_empty_test_observer",
)
# where torch imports them under the same name (the C module first: the originals)
NAMESPACES = (
    "torch._C._autograd",
    "torch.autograd",
    "torch.autograd.profiler",
    "torch.autograd.profiler_legacy",
)


class ProfilerSwitches:
    def __init__(self, events: list[tuple[str, str]]) -> None:
        self.events = events
        self._judge = [False]
        self._on_stack: Callable[[FrameType | None], bool] = lambda frame: False

    def install(self, candidate_on_stack: Callable[[FrameType | None], bool]) -> None:
        """``candidate_on_stack(frame)``: whether the candidate's code runs anywhere from
        ``frame`` outwards. A switch works only while the judge's profiler starts or stops and
        no code of the candidate's is on the stack: torch's own start calls into modules a
        kernel can patch (``torch.distributed.is_available``), and from there a kernel turned
        the records off once the judge's profiler had turned them on."""
        self._on_stack = candidate_on_stack
        modules = [importlib.import_module(name) for name in NAMESPACES]
        for name in SWITCHES:
            original = getattr(modules[0], name, None)
            if original is None:
                continue
            guarded = self._guarded(name, original)
            for module in modules:
                if getattr(module, name, None) is original:
                    setattr(module, name, guarded)

    @contextlib.contextmanager
    def judges_own(self) -> Iterator[None]:
        """While the judge's profiler starts or stops."""
        self._judge[0] = True
        try:
            yield
        finally:
            self._judge[0] = False

    def _guarded(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        events, judge, on_stack = self.events, self._judge, self._on_stack

        def allowed(args: tuple) -> bool:
            # past this function, the gate's check and the gate: the switch's caller
            return judge[0] and not on_stack(sys._getframe(3))

        def refuse() -> NoReturn:
            events.append(("harness_tampering", f"torch's profiler switch {name} was called"))
            raise RuntimeError(f"{name} belongs to the judge's profiler")

        return gate(original, allowed, refuse)
