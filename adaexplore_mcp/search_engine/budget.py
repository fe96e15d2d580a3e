"""Budgets: steps (evaluated nodes), and optionally wall clock and tokens.

Outstanding selections count against the step budget, so several workers cannot overshoot it
together; an abandoned selection stops counting when its lease expires.
"""

from __future__ import annotations

from adaexplore_mcp.search_engine.errors import BudgetExhausted
from adaexplore_mcp.search_engine.models import Budget, Usage
from adaexplore_mcp.search_engine.repository import SearchRecord
from adaexplore_mcp.search_engine.settings import SearchSettings


def default_budget(settings: SearchSettings) -> Budget:
    return Budget(
        max_steps=settings.max_steps,
        max_wall_s=settings.max_wall_s,
        max_tokens=settings.max_tokens,
    )


def exhausted(
    record: SearchRecord, in_flight: int, now: float, *, steps: bool = True
) -> tuple[str, str] | None:
    """(which budget, how it was spent), or None while every budget has room for one more step
    beyond the ``in_flight`` ones."""
    budget = record.budget
    if steps and record.steps + in_flight >= budget.max_steps:
        flying = f", {in_flight} in flight" if in_flight else ""
        return "steps", f"{record.steps} of {budget.max_steps} steps taken{flying}"
    wall = record.wall_s(now)
    if budget.max_wall_s is not None and wall >= budget.max_wall_s:
        return "wall_clock", f"{wall:.0f} s of {budget.max_wall_s:.0f} s"
    if budget.max_tokens is not None and record.tokens >= budget.max_tokens:
        return "tokens", f"{record.tokens} of {budget.max_tokens} tokens"
    return None


def check(record: SearchRecord, in_flight: int, now: float, *, steps: bool = True) -> None:
    spent = exhausted(record, in_flight, now, steps=steps)
    if spent is not None:
        reason, detail = spent
        waiting = reason == "steps" and record.steps < record.budget.max_steps
        raise BudgetExhausted(record.id, reason, detail, in_flight=in_flight if waiting else 0)


def usage(record: SearchRecord, in_flight: int, now: float) -> Usage:
    return Usage(
        steps=record.steps,
        in_flight=in_flight,
        evaluations=record.evaluations,
        wall_s=record.wall_s(now),
        tokens=record.tokens,
    )
