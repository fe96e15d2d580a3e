"""Diagnostics the judge's processes turn on from the worker's environment (the worker prints
every process's output when one is set, ``limits.DEBUG_VARIABLES``):

- ``ADAEXPLORE_DEBUG_STACKS_S``: the process writes its threads' stacks into its output every
  that many seconds;
- ``ADAEXPLORE_DEBUG_PROFILE=N``: the trusted and the task's processes run their job under
  cProfile and print their N costliest functions, by time including callees. Not the
  candidate's: its audit hook refuses a profiler.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping


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
