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
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch.profiler import record_function  # bound now: a kernel could replace torch's

from adaexplore_mcp.judge.candidate.launchers import (
    candidate_callbacks,
    launch_hook,
    launcher_classes,
    tritons,
)
from adaexplore_mcp.judge.candidate.sealing import sealed


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

    def outside(self, callback: Any) -> Any:
        """``callback``, the candidate's code that Triton calls inside a launch, in a range of
        its own for the profiler (which goes by spans). The dispatch mode needs no mark: it
        asks which code called each operator (``recorder.OpRecorder``)."""
        if not callable(callback) or callback in self.wrappers:
            return callback
        call = sealed(_outside, kwdefaults={"_judge_callback": callback, "_judge_state": self})
        self.wrappers.add(call)
        return call

    def benchmark(self, bench: Any) -> Any:
        """Triton's own benchmarker, which the autotuner runs on each config, in a range of its
        own for the profiler: the torch work it does itself (clearing the cache, the timings'
        quantiles) is Triton's. One the candidate passed is its code like any other."""
        if not tritons(bench) or bench in self.wrappers:
            return bench
        call = sealed(_benchmark, kwdefaults={"_judge_bench": bench, "_judge_state": self})
        self.wrappers.add(call)
        return call

    def launching(self, launcher: Any, counts: bool, kwargs: dict[str, Any]) -> bool:
        """Count one launch of ``launcher``; False where it must do nothing (``noop``)."""
        if counts:
            self.launches += 1
            name = getattr(getattr(launcher, "fn", None), "__name__", "") or getattr(
                launcher, "__name__", "kernel"
            )
            self.launched[name] = self.launched.get(name, 0) + 1
            if self.noop:
                return False
            hook = launch_hook()
            if hook:
                self.events.append(("harness_tampering", f"Triton's {hook} was set"))
        if "grid" in kwargs:
            kwargs["grid"] = self.outside(kwargs["grid"])
        return True

    def launch(self, launcher: Any, original: Callable[..., Any], args, kwargs) -> Any:
        self.in_launch[0] += 1
        try:
            with (
                self.ranged(self.launch_range),
                candidate_callbacks(launcher, self.outside, self.benchmark),
            ):
                return original(launcher, *args, **kwargs)
        finally:
            self.in_launch[0] -= 1


def wrap_launchers(state: LaunchState) -> None:
    """Replace every launcher class's ``run`` with a sealed wrapper; the original stays its
    ``__wrapped__`` (a kernel may call it: a launch that is not counted is its loss)."""
    for owner, counts in launcher_classes():
        original = owner.run
        defaults = {"_judge_original": original, "_judge_counts": counts, "_judge_state": state}
        run = sealed(_run, kwdefaults=defaults)
        run.__wrapped__ = original  # type: ignore[attr-defined]
        owner.run = run


# The sealed bodies: no closure, no globals but the builtins, all they use a default. Passing a
# default of its own to one swaps in the caller's object, never shows the judge's.


def _run(self, *args, _judge_original, _judge_counts, _judge_state, **kwargs):
    if kwargs.get("warmup"):
        return _judge_original(self, *args, **kwargs)
    if not _judge_state.launching(self, _judge_counts, kwargs):
        return None
    return _judge_state.launch(self, _judge_original, args, kwargs)


def _outside(*args, _judge_callback, _judge_state, **kwargs):
    with _judge_state.ranged(_judge_state.callback_range):
        saved, _judge_state.in_launch[0] = _judge_state.in_launch[0], 0
        try:
            return _judge_callback(*args, **kwargs)
        finally:
            _judge_state.in_launch[0] = saved


def _benchmark(*args, _judge_bench, _judge_state, **kwargs):
    with _judge_state.ranged(_judge_state.bench_range):
        return _judge_bench(*args, **kwargs)
