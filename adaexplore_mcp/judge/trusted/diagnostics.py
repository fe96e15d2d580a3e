"""Diagnostics the judge's processes turn on from the worker's environment (the worker prints
every process's output when one is set, ``limits.DEBUG_VARIABLES``):

- ``ADAEXPLORE_DEBUG_STACKS_S``: the process writes its threads' stacks into its output every
  that many seconds;
- ``ADAEXPLORE_DEBUG_PROFILE=N``: the trusted and the task's processes run their job under
  cProfile and print their N costliest functions, by time including callees. Not the
  candidate's: its audit hook refuses a profiler;
- ``ADAEXPLORE_DEBUG_SPANS=1``: the trusted process prints a line for every timed span: the
  host's milliseconds in each of its steps, each step's own (``span_steps``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

Step = TypeVar("Step", bound=Callable[..., Any])


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
    timer: Any,
    fresh_sets: Step,
    check: Callable[..., None],
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[Step, Callable[..., None]]:
    """With ``ADAEXPLORE_DEBUG_SPANS`` set, the steps of ``timer`` (a ``SpanTimer``: its
    instance's methods wrapped, its class untouched) and the evaluation's ``fresh_sets`` and
    ``check`` timed, and a line printed for each span as its check ends: every step's own
    milliseconds (the calibration's without the arming and the wait it contains, which count
    as the null subject's), the span's total from its fresh sets, and what no step covers.
    Unset: ``fresh_sets`` and ``check`` as they are, and nothing wrapped."""
    if not env.get("ADAEXPLORE_DEBUG_SPANS"):
        return fresh_sets, check
    own: dict[str, float] = {}
    nested: list[float] = []  # per step running now, its inner steps' time
    started: list[float] = []

    def timed(function: Callable[..., Any], name: Callable[[tuple], str]) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            begun = clock()
            nested.append(0.0)
            try:
                return function(*args, **kwargs)
            finally:
                took = clock() - begun
                inner = nested.pop()
                key = name(args)
                own[key] = own.get(key, 0.0) + took - inner
                if nested:
                    nested[-1] += took

        return run

    def named(step: str) -> Callable[[tuple], str]:
        return lambda args: step

    def fresh(*args: Any, **kwargs: Any) -> Any:
        started.append(clock())
        return fresh_timed(*args, **kwargs)

    def checked(*args: Any, **kwargs: Any) -> None:
        try:
            check_timed(*args, **kwargs)
        finally:
            total = clock() - started.pop() if started else sum(own.values())
            steps = " ".join(f"{key}={ms * 1e3:.1f}" for key, ms in own.items())
            print(
                f"--- span steps, ms: {steps} total={total * 1e3:.1f} "
                f"other={(total - sum(own.values())) * 1e3:.1f}",
                flush=True,
            )
            own.clear()

    timer._armed = timed(timer._armed, lambda args: f"{args[0].role}_arming")
    timer._wait = timed(timer._wait, named("gpu_waits"))
    timer._settle = timed(timer._settle, named("settle"))
    timer._handoff = timed(timer._handoff, named("calibration"))
    timer.inputs.stage = timed(timer.inputs.stage, named("staging"))
    fresh_timed = timed(fresh_sets, named("fresh_sets"))
    check_timed = timed(check, named("check"))
    return fresh, checked  # type: ignore[return-value]
