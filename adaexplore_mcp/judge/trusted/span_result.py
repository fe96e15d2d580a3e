"""What one span measured, and what of it is charged to the subject's calls
(``trusted.timing`` measures it; ``trusted.spans`` runs spans one after another)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from adaexplore_mcp.judge.wire.subject import Signals


@dataclass(frozen=True)
class NullOffset:
    """Where new contexts' handoffs read against the null subject's, measured with the null
    panel (``trusted.null_panel``), in ms (negative: less)."""

    ms: float  # the panel's median: added to the null subject's handoff
    members_ms: tuple[float, ...]  # each member's median difference

    @property
    def scatter_ms(self) -> float | None:
        """How far new contexts lie from each other (the members' standard deviation): the
        candidate's context is one of them, new every evaluation, and its own offset is not
        known, so two evaluations of one kernel differ by about this much a call."""
        return statistics.stdev(self.members_ms) if len(self.members_ms) > 1 else None


@dataclass
class Handoff:
    """The calibration span: the null subject's gated time a gate, and its inputs' copies and
    flushes."""

    gated_ms: float  # a gate's (its calls'), the median of the span's
    fill_ms: float  # every call's copy and flush together
    held_ms: float = 0.0  # GPU time other contexts took while the null subject armed
    # where a new context's handoff reads against the null subject's (``trusted.null_panel``)
    offset_ms: float = 0.0

    @property
    def handoff_ms(self) -> float:
        """The handoff taken off every gate: the null subject's, moved to a new context's."""
        return self.gated_ms + self.offset_ms


@dataclass
class SpanResult:
    gated_ms: list[float]  # a gate's: from its opening to its last call's done word
    fill_ms: float  # the calls' input copies and flushes, every gate closed
    handoff: Handoff
    host_s: float
    outputs: list[list[Any]]
    synchronizing: bool
    signals: Signals
    inputs_modified: bool
    held_ms: float = 0.0  # GPU time other contexts took while the subject armed
    fill_allowance_ms: float = 0.0
    # GPU time other contexts took after the span, while the judge waited for the GPU to be
    # quiet before its calibration (its processes stopped): a diagnostic, not charged
    settled_ms: float = 0.0
    # its outputs were copied after its last call, not each behind its call: one call's work
    # could have been left to the next (a subject that armed late, or outputs too large for
    # the memory set aside)
    outputs_late: bool = False
    calls_per_gate: int = 1  # ``trusted.gate_groups``

    @property
    def handoff_ms(self) -> float:
        return self.handoff.handoff_ms

    @property
    def fill_excess_ms(self) -> float:
        """GPU time the subject's context took while its gates were closed."""
        return max(self.fill_ms - self.handoff.fill_ms, 0.0)

    @property
    def held_excess_ms(self) -> float:
        """GPU time the subject's context took while the judge held the GPU for it to arm."""
        return max(self.held_ms - self.handoff.held_ms, 0.0)

    @property
    def charged_excess_ms(self) -> float:
        """The GPU time the subject took before its gates opened, beyond what honest subjects
        show: counted as calls."""
        return max(self.fill_excess_ms + self.held_excess_ms - self.fill_allowance_ms, 0.0)

    def own_ms(self) -> float:
        """The calls' mean gated time less the handoff, nothing charged: what a span's size is
        planned on. The first span a kernel's process arms often shows held time in steps of
        about a handoff (0.3-1.5 ms in a third of evaluations on an H200); planned on with it, a
        0.07 ms kernel's spans had 2-3 calls instead of 13, and the excess of every span was
        shared by fewer calls."""
        calls = len(self.gated_ms) * self.calls_per_gate
        return self._own_total_ms() / calls if calls else 0.0

    def per_call_ms(self, calls: int) -> float:
        """The calls' mean: each gate's gated time less the handoff (at least zero), plus the
        charged excess, over the calls."""
        return (self._own_total_ms() + self.charged_excess_ms) / calls

    def _own_total_ms(self) -> float:
        """Every gate's gated time less the handoff, at least zero, summed."""
        return sum(max(gated - self.handoff_ms, 0.0) for gated in self.gated_ms)
