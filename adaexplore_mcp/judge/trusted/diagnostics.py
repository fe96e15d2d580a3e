"""Diagnostics the judge's processes turn on from the worker's environment (the worker prints
every process's output when one is set, ``limits.DEBUG_VARIABLES``):

- ``ADAEXPLORE_DEBUG_STACKS_S``: the process writes its threads' stacks into its output every
  that many seconds;
- ``ADAEXPLORE_DEBUG_PROFILE=N``: the trusted and the task's processes run their job under
  cProfile and print their N costliest functions, by time including callees. Not the
  candidate's: its audit hook refuses a profiler;
- ``ADAEXPLORE_DEBUG_SPANS=1``: the trusted process prints a line for every span in which it
  times a candidate: the host's milliseconds in each of its steps (``span_steps``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adaexplore_mcp.judge.trusted.span_result import SpanResult
    from adaexplore_mcp.judge.trusted.timing import SpanTimer

    FreshSets = Callable[[int], list[tuple[int, list[Any]]]]
    Check = Callable[[list[tuple[int, list[Any]]], SpanResult, int], None]


def dump_stacks_later(env: Mapping[str, str]) -> None:
    seconds = float(env.get("ADAEXPLORE_DEBUG_STACKS_S") or 0)
    if seconds > 0:
        import faulthandler

        faulthandler.dump_traceback_later(seconds, repeat=True, file=sys.stderr)


@contextlib.contextmanager
def profiled(env: Mapping[str, str], role: str) -> Iterator[None]:
    top = int(env.get("ADAEXPLORE_DEBUG_PROFILE") or 0)
    if top <= 0:
        yield
        return
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        stats = pstats.Stats(profile)
        rows = sorted(stats.stats.items(), key=lambda item: -item[1][3])[:top]  # type: ignore[attr-defined]
        lines = [f"--- profile of the {role}'s process: cumulative s, own s, calls, function"]
        for (path, line, name), (_, calls, own, cumulative, _) in rows:
            where = f"{os.path.basename(path)}:{line}" if line else path[:20]
            lines.append(f"{cumulative:7.3f} {own:7.3f} {calls:6d} {where}({name[:30]})")
        print("\n".join(lines), flush=True)


def span_steps(
    env: Mapping[str, str],
    timer: SpanTimer,
    fresh_sets: FreshSets,
    check: Check,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[FreshSets, Check]:
    """With ``ADAEXPLORE_DEBUG_SPANS`` set to 1, the steps of a candidate's timing timed on the
    host: ``timer``'s (its instance's methods wrapped, its class untouched) and the
    evaluation's ``fresh_sets`` and ``check``. A line is printed for each span as its check
    ends: every step's own milliseconds (the calibration's without the arming and the wait it
    contains, which count as the null subject's), the span's total from its fresh sets, and
    what no step covers. Otherwise ``fresh_sets`` and ``check`` as they are, nothing wrapped."""
    if int(env.get("ADAEXPLORE_DEBUG_SPANS") or 0) <= 0:
        return fresh_sets, check
    own: dict[str, float] = {}
    nested: list[float] = []  # for each step running now, the time of the steps inside it
    started: list[float] = []

    def timed(function: Callable[..., Any], step: Callable[..., str]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            key = step(*args, **kwargs)
            begun = clock()
            nested.append(0.0)
            try:
                return function(*args, **kwargs)
            finally:
                took = clock() - begun
                own[key] = own.get(key, 0.0) + took - nested.pop()
                if nested:
                    nested[-1] += took

        return run

    def named(name: str) -> Callable[..., str]:
        return lambda *args, **kwargs: name

    def arming(link: Any, *args: Any, **kwargs: Any) -> str:
        return f"{link.role}_arming"

    timer._armed = timed(timer._armed, arming)  # type: ignore[method-assign]
    timer._wait = timed(timer._wait, named("gpu_waits"))  # type: ignore[method-assign]
    timer._settle = timed(timer._settle, named("settle"))  # type: ignore[method-assign]
    timer._handoff = timed(timer._handoff, named("calibration"))  # type: ignore[method-assign]
    timer.inputs.stage = timed(timer.inputs.stage, named("staging"))  # type: ignore[method-assign]
    fresh_timed = timed(fresh_sets, named("fresh_sets"))
    check_timed = timed(check, named("check"))

    def fresh(count: int) -> list[tuple[int, list[Any]]]:
        started.append(clock())
        return fresh_timed(count)

    def checked(sets: list[tuple[int, list[Any]]], result: SpanResult, first: int) -> None:
        try:
            check_timed(sets, result, first)
        finally:
            total = clock() - started.pop() if started else sum(own.values())
            steps = " ".join(f"{key}={seconds * 1e3:.1f}" for key, seconds in own.items())
            other = (total - sum(own.values())) * 1e3
            print(f"--- span steps, ms: {steps} total={total * 1e3:.1f} other={other:.1f}")
            own.clear()

    return fresh, checked
