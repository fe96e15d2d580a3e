"""The judge's wrapper around each of Triton's launchers (``launchers.launcher_classes``), and
around the candidate's callables Triton calls inside a launch.

Each launch is counted, the span of a launch (and of the autotuner around it) is marked for the
profiler so that the torch work Triton does itself is not charged to the candidate, and in
``noop`` mode a launch does nothing at all. The wrappers are where a kernel can reach them (a
launcher class's ``run``, a heuristic's table during a launch), so they are sealed
(``candidate.sealing``): the counters, the flags and the profiler's secret range names are in a
``LaunchState`` that only their defaults hold.
"""

from __future__ import annotations

import contextlib
import os
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch.profiler import record_function  # bound now: a kernel could replace torch's

from adaexplore_mcp.judge.candidate.launchers import (
    TRITON_DIR,
    candidate_callbacks,
    launch_hook,
    launcher_classes,
    tritons,
)
from adaexplore_mcp.judge.candidate.sealing import sealed_entry
from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``


@dataclass
class LaunchState:
    """What the wrappers count and read; the monitor holds the same object."""

    events: list[tuple[str, str]]
    launch_range: str  # the profiler's names for a launch's span, for the candidate's code
    callback_range: str  # inside one, and for Triton's own benchmarking of a config
    bench_range: str
    launches: int = 0
    in_launch: list[int] = field(default_factory=lambda: [0])  # shared with the dispatch mode
    noop: bool = False
    profiling: bool = False
    launched: dict[str, int] = field(default_factory=dict)
    # the callables wrapped here: a mark the candidate cannot put on one of its own
    wrappers: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)

    def ranged(self, name: str) -> contextlib.AbstractContextManager[Any]:
        """A range of the profiler's, while it records (its own operators are ``profiler::``,
        which the recorders leave out)."""
        if self.profiling:
            return record_function(name)
        return contextlib.nullcontext()

    def called_by_triton(self) -> bool:
        """Whether Triton's own code (its autotuner) called the benchmarker's wrapper: past
        this method, the wrapper's body and its entry. A kernel that kept the wrapper (a grid
        function can read it off its autotuner during a launch) and called it with work of its
        own had that work in the range the profiler exempts."""
        caller = sys._getframe(3)
        return os.path.realpath(caller.f_code.co_filename).startswith(TRITON_DIR)

    def outside(self, callback: Any) -> Any:
        """``callback``, the candidate's code that Triton calls inside a launch, in a range of
        its own for the profiler (which goes by spans). The dispatch mode needs no mark: it
        asks which code called each operator (``recorder.OpRecorder``)."""
        if not callable(callback) or callback in self.wrappers:
            return callback
        call = sealed_entry(_outside, callback, self)
        self.wrappers.add(call)
        return call

    def benchmark(self, bench: Any) -> Any:
        """Triton's own benchmarker, which the autotuner runs on each config, in a range of its
        own for the profiler: the torch work it does itself (clearing the cache, the timings'
        quantiles) is Triton's. One the candidate passed is its code like any other."""
        if not tritons(bench) or bench in self.wrappers:
            return bench
        call = sealed_entry(_benchmark, bench, self)
        self.wrappers.add(call)
        return call

    def launching(self, launcher: Any, counts: bool, kwargs: dict[str, Any]) -> bool:
        """Before a launch of ``launcher``: False where it must do nothing (``noop``), and is
        counted as it stands."""
        if counts:
            if self.noop:
                self._count(launcher)
                return False
            hook = launch_hook()
            if hook:
                self.events.append(("harness_tampering", f"Triton's {hook} was set"))
        if "grid" in kwargs:
            kwargs["grid"] = self.outside(kwargs["grid"])
        return True

    def launch(
        self, launcher: Any, original: Callable[..., Any], counts: bool, args, kwargs
    ) -> Any:
        """The launch, counted once it returned: a kernel that called a launcher with what it
        refuses (no grid), caught the error out of the source check's sight and did the work
        in numpy had a launch counted for every call."""
        self.in_launch[0] += 1
        try:
            with (
                self.ranged(self.launch_range),
                candidate_callbacks(launcher, self.outside, self.benchmark),
            ):
                result = original(launcher, *args, **kwargs)
        finally:
            self.in_launch[0] -= 1
        if counts:
            self._count(launcher)
        return result

    def _count(self, launcher: Any) -> None:
        self.launches += 1
        name = getattr(getattr(launcher, "fn", None), "__name__", "") or getattr(
            launcher, "__name__", "kernel"
        )
        self.launched[name] = self.launched.get(name, 0) + 1


def wrap_launchers(state: LaunchState) -> None:
    """Replace every launcher class's ``run`` with a sealed wrapper; the original stays its
    ``__wrapped__`` (a kernel may call it: a launch that is not counted is its loss)."""
    for owner, counts in launcher_classes():
        original = owner.run
        run = sealed_entry(_run, original, counts, state)
        run.__wrapped__ = original  # type: ignore[attr-defined]
        owner.run = run


# The sealed bodies (``sealing.sealed_entry``): no closure, no globals but the builtins, what
# they use a positional-only default no caller can replace.


def _run(args, kwargs, original, counts, state, /):
    launcher, rest = args[0], args[1:]
    if kwargs.get("warmup"):
        return original(*args, **kwargs)
    if not state.launching(launcher, counts, kwargs):
        return None
    return state.launch(launcher, original, counts, rest, kwargs)


def _outside(args, kwargs, callback, state, /):
    with state.ranged(state.callback_range):
        saved, state.in_launch[0] = state.in_launch[0], 0
        try:
            return callback(*args, **kwargs)
        finally:
            state.in_launch[0] = saved


def _benchmark(args, kwargs, bench, state, /):
    if not state.called_by_triton():  # a kernel kept the wrapper and called it: no range
        return bench(*args, **kwargs)
    with state.ranged(state.bench_range):
        return bench(*args, **kwargs)
