"""Which of a span's calls pass one gate together (``timing.calls_per_gate``).

Every gate costs the span a handoff between the trusted process's GPU context and the
subject's, and the calibration takes a handoff of the null subject's off every gate. What the
handoff reads moves between evaluations (0.5-1 µs a call on an H200, new contexts scattering
around each other), and with a gate a call every call carries all of it. Behind one gate, ``m``
calls share one handoff and its movement.

What holds only with a gate a call, and what is traded for that:
- a group's inputs are all written before its gate opens, so a call can read the next calls'
  inputs: work moved between the calls of a group does not change the group's time, but a
  process that serves the judge dishonestly could batch the group's calls into fewer launches;
- the calls after a group's first start on the L2 their predecessor left (weights stay warm),
  not on one just flushed;
- a group's outputs are copied only after its last call, so calls whose outputs share memory
  (a kernel writing every call into one buffer of its own) would leave only the last call's:
  such a span gets a gate a call.

On an H200 four calls a gate took the medians' movement between evaluations from 0.58 to 0.24
µs a call, and read 3-13% faster than a gate a call (sum_rows most: it skips the write-back of
a dirty L2 that do_bench's regime pays every call). So ``timing.calls_per_gate`` stays at 1 for
judging (docs/integrity.md, "The clock").
"""

from __future__ import annotations

from typing import Any

from adaexplore_mcp.judge.trusted.landing import Landing


def gate_groups(calls: int, per_gate: int, placed: list[list[Any]] | None) -> list[range]:
    """The span's calls, in order, cut into the groups that pass one gate each: ``per_gate``
    calls where that divides the span, its outputs were placed (known before the first gate
    opens) and no two calls of a group return overlapping memory; else a gate a call."""
    if per_gate <= 1 or placed is None or calls % per_gate or _overlapping(placed, per_gate):
        per_gate = 1
    return [range(start, start + per_gate) for start in range(0, calls, per_gate)]


def _overlapping(placed: list[list[Any]], per_gate: int) -> bool:
    for start in range(0, len(placed), per_gate):
        extents = [Landing.extents(outputs) for outputs in placed[start : start + per_gate]]
        for index, ours in enumerate(extents):
            for theirs in extents[index + 1 :]:
                if any(
                    lo < other_hi and other_lo < hi
                    for lo, hi in ours
                    for other_lo, other_hi in theirs
                ):
                    return True
    return False
