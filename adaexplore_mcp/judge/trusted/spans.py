"""One measurement: how many calls a span and how many spans (``plan_calls``), and the spans
run one after another with every output checked (``run_spans``)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from adaexplore_mcp.judge.measurement import RuntimeStats
from adaexplore_mcp.judge.settings import TimingSettings
from adaexplore_mcp.judge.trusted.span_result import SpanResult
from adaexplore_mcp.judge.trusted.staging import set_bytes
from adaexplore_mcp.judge.trusted.timing import SpanTimer


def stats(samples_ms: list[float]) -> RuntimeStats:
    return RuntimeStats(
        median_ms=statistics.median(samples_ms),
        mean_ms=statistics.fmean(samples_ms),
        std_ms=statistics.pstdev(samples_ms) if len(samples_ms) > 1 else 0.0,
        min_ms=min(samples_ms),
        max_ms=max(samples_ms),
        n=len(samples_ms),
    )


@dataclass
class SpanMeasurement:
    per_call_ms: list[float] = field(default_factory=list)
    handoff_ms: list[float] = field(default_factory=list)
    fill_excess_ms: list[float] = field(default_factory=list)
    held_excess_ms: list[float] = field(default_factory=list)
    settled_ms: list[float] = field(default_factory=list)
    host_ms: list[float] = field(default_factory=list)
    calls_per_span: int = 1
    calls_per_gate: int = 1  # the counted spans' fewest
    synchronizing: bool = False

    @property
    def spans(self) -> int:
        return len(self.per_call_ms)


def plan_calls(
    settings: TimingSettings, *, per_call_ms: float, call_bytes: int, total_memory: int
) -> tuple[int, int]:
    """(calls per span, spans): spans of about ``span_ms`` of kernel time within the memory
    budget, enough of them for ``target_ms`` and ``min_runs`` calls, at most ``max_runs``."""
    budget = (
        settings.memory_budget_mb * 2**20
        if settings.memory_budget_mb
        else max(2**30, total_memory // 10)
    )
    per_call_ms = max(per_call_ms, 1e-4)
    by_memory = max(1, budget // max(call_bytes, 1))
    by_time = math.ceil(settings.span_ms / per_call_ms)
    calls = max(1, min(by_memory, by_time, settings.max_calls_per_span, settings.max_runs))
    if calls >= settings.calls_per_gate:  # whole gates (``trusted.gate_groups``)
        calls -= calls % settings.calls_per_gate
    spans = math.ceil(settings.target_ms / (calls * per_call_ms))
    spans = max(spans, settings.min_spans, math.ceil(settings.min_runs / calls))
    spans = min(spans, settings.max_spans, max(settings.min_spans, settings.max_runs // calls))
    return calls, spans


def run_spans(
    timer: SpanTimer,
    *,
    fresh_sets: Callable[[int], list[tuple[int, list[Any]]]],
    check: Callable[[list[tuple[int, list[Any]]], SpanResult, int], None],
    settings: TimingSettings,
    total_memory: int,
    warm: Callable[[], None] | None = None,
) -> SpanMeasurement:
    """A probe span of one call, then the planned spans; ``check`` sees every output."""
    measurement = SpanMeasurement()
    if warm is not None:
        warm()
    done = 0
    for _ in range(3):  # until a probe is not slowed by what only a first call does
        first = fresh_sets(1)
        probe = timer.span([values for _, values in first])
        check(first, probe, done)
        done += 1
        if not probe.synchronizing:
            break
    timer.synchronizing = False
    per_call = probe.own_ms()
    # a call's inputs lie up to five times on the GPU in a span (the task's, this process's copy,
    # its staging, the candidate's arena and the null subject's) and its outputs three times
    # (the candidate's, their landing and the reference)
    call_bytes = 5 * set_bytes(first[0][1]) + 3 * sum(
        o.untyped_storage().nbytes() for o in probe.outputs[0] if isinstance(o, torch.Tensor)
    )
    calls, spans = plan_calls(
        settings, per_call_ms=per_call, call_bytes=call_bytes, total_memory=total_memory
    )
    measurement.calls_per_span = calls
    while measurement.spans < spans:
        sets = fresh_sets(calls)
        result = timer.span([values for _, values in sets])
        check(sets, result, done)
        done += calls
        if result.outputs_late and calls > 1:
            # its outputs were taken after the last call (its answer came once the gates were
            # open, or they outgrew the memory set aside), where one call's work put off to the
            # next would be done: its time is not counted, and every span from now on is of
            # one call
            calls = measurement.calls_per_span = 1
            continue
        measurement.per_call_ms.append(result.per_call_ms(calls))
        first_counted = measurement.spans == 1
        measurement.calls_per_gate = (
            result.calls_per_gate
            if first_counted
            else min(measurement.calls_per_gate, result.calls_per_gate)
        )
        measurement.handoff_ms.append(result.handoff_ms)
        measurement.fill_excess_ms.append(result.fill_excess_ms)
        measurement.held_excess_ms.append(result.held_excess_ms)
        measurement.settled_ms.append(result.settled_ms)
        measurement.host_ms.append(result.host_s * 1e3 / calls)
    measurement.synchronizing = timer.synchronizing
    return measurement
