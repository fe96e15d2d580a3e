"""Eager and torch.compile baselines: timed once per (task, GPU, torch, triton), then cached."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from pydantic import BaseModel

from adaexplore_mcp.judge import messages
from adaexplore_mcp.judge.measurement import RuntimeStats
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.judge.result import EvalResult
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import Task

log = logging.getLogger(__name__)

# Bump when the timing method changes, so old baselines are not compared with new timings.
TIMING_METHOD = "gated-calls-v4"  # the trusted process times spans of calls, each behind its gate


class Baseline(BaseModel):
    eager: RuntimeStats
    compiled: RuntimeStats | None = None
    compile_error: str | None = None
    compile_s: float | None = None
    # what the baseline was timed for (baselines cached before policies were strict, triton)
    precision: Precision = Precision.STRICT
    ops: Ops = Ops.TRITON


def add_speedups(result: EvalResult, baseline: Baseline) -> None:
    """Sets a correct, timed result's baselines and its speedups over them."""
    assert result.runtime is not None
    result.eager = baseline.eager
    result.compiled = baseline.compiled
    result.speedup_eager = baseline.eager.median_ms / result.runtime.median_ms
    if baseline.compiled is not None:
        result.speedup_compile = baseline.compiled.median_ms / result.runtime.median_ms
    result.message = messages.with_speedups(
        result.message, result.speedup_eager, result.speedup_compile
    )


def baseline_key(
    task: Task,
    device_name: str,
    torch: str,
    triton: str,
    precision: Precision = Precision.STRICT,
    ops: Ops = Ops.TRITON,
    calls_per_gate: int = 1,
) -> str:
    # The policies are part of the key: tf32 baselines are timed with TF32 on, and results
    # under different policies are never mixed (strict and legacy time the same way but stay
    # apart, and so do triton and mixed, whose reference is the same).
    parts: tuple[str, ...] = (task.hash, device_name, torch, triton, TIMING_METHOD)
    if precision is not Precision.STRICT:  # strict keys are those cached before policies
        parts += (f"precision={precision.value}",)
    if ops is not Ops.TRITON:  # and triton keys those cached before the operator policy
        parts += (f"ops={ops.value}",)
    if calls_per_gate != 1:  # a clock of its own (``timing.calls_per_gate``)
        parts += (f"calls_per_gate={calls_per_gate}",)
    return "|".join(parts)


class BaselineCache:
    """Looks baselines up in the store; measures each missing one once, however many
    evaluations ask for it at the same time."""

    def __init__(self, store: Store | None, *, calls_per_gate: int = 1) -> None:
        """``calls_per_gate``: the judge's ``timing.calls_per_gate``, which its baselines are
        timed with and keyed by."""
        self._store = store
        self._calls_per_gate = calls_per_gate
        self._memory: dict[str, Baseline] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def get(
        self,
        task: Task,
        *,
        device_name: str,
        torch: str,
        triton: str,
        measure: Callable[[], Awaitable[Baseline]],
        precision: Precision = Precision.STRICT,
        ops: Ops = Ops.TRITON,
    ) -> Baseline:
        key = baseline_key(task, device_name, torch, triton, precision, ops, self._calls_per_gate)
        async with self._locks.setdefault(key, asyncio.Lock()):
            cached = self._lookup(key)
            if cached is not None:
                return cached
            baseline = await measure()
            self._memory[key] = baseline
            if self._store is not None:
                await asyncio.to_thread(
                    self._store.put_baseline,
                    key=key,
                    task_name=task.name,
                    task_hash=task.hash,
                    device_name=device_name,
                    torch=torch,
                    triton=triton,
                    record=baseline.model_dump(mode="json"),
                )
            return baseline

    def _lookup(self, key: str) -> Baseline | None:
        if key in self._memory:
            return self._memory[key]
        if self._store is None:
            return None
        stored = self._store.get_baseline(key)
        if stored is None:
            return None
        baseline = Baseline.model_validate(stored.record)
        self._memory[key] = baseline
        return baseline
