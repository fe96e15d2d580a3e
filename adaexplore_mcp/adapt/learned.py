"""What a run taught the rule memory: the memory is read before and after, and every rule that
is new, became active or gained support is reported with its support and example failures."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from adaexplore_mcp.memory import Rule, RuleStatus, SkillMemory

EXAMPLES = 3


class RuleState(BaseModel):
    status: RuleStatus
    support_tasks: int
    support_failures: int


class Snapshot(BaseModel):
    taken_at: float
    rules: dict[int, RuleState]


class Example(BaseModel):
    task: str
    error_type: str
    error: str = Field(description="The error's last line, cut to 300 characters.")


class RuleChange(BaseModel):
    id: int
    text: str
    change: Literal["new", "activated", "strengthened"]
    status: RuleStatus
    support_tasks: int
    support_failures: int
    before: RuleState | None = Field(description="None for a new rule.")
    tasks: list[str]
    examples: list[Example] = Field(description="Failures recorded during the run.")


class LearnedRules(BaseModel):
    new: int
    activated: int
    strengthened: int
    active_total: int
    rules: list[RuleChange] = Field(description="Activated first, then new, then strengthened.")


def snapshot(memory: SkillMemory, now: float) -> Snapshot:
    return Snapshot(taken_at=now, rules={rule.id: _state(rule) for rule in memory.rules()})


def learned(memory: SkillMemory, before: Snapshot) -> LearnedRules:
    changes = []
    rules = memory.rules()
    for rule in rules:
        old = before.rules.get(rule.id)
        change = _change(old, _state(rule))
        if change is None:
            continue
        failures = [f for f in memory.failures(rule_id=rule.id) if f.created_at >= before.taken_at]
        changes.append(
            RuleChange(
                id=rule.id,
                text=rule.text,
                change=change,
                status=rule.status,
                support_tasks=rule.support_tasks,
                support_failures=rule.support_failures,
                before=old,
                tasks=rule.tasks,
                examples=[
                    Example(task=f.task, error_type=f.error_type, error=_last_line(f.error))
                    for f in failures[:EXAMPLES]
                ],
            )
        )
    order = {"activated": 0, "new": 1, "strengthened": 2}
    changes.sort(key=lambda c: (order[c.change], -c.support_tasks, c.id))
    return LearnedRules(
        new=sum(c.change == "new" for c in changes),
        activated=sum(c.change == "activated" for c in changes),
        strengthened=sum(c.change == "strengthened" for c in changes),
        active_total=sum(rule.status is RuleStatus.ACTIVE for rule in rules),
        rules=changes,
    )


def _change(
    old: RuleState | None, new: RuleState
) -> Literal["new", "activated", "strengthened"] | None:
    if new.status is RuleStatus.ACTIVE and (old is None or old.status is not RuleStatus.ACTIVE):
        return "activated"
    if old is None:
        return "new"
    if (new.support_tasks, new.support_failures) > (old.support_tasks, old.support_failures):
        return "strengthened"
    return None


def _state(rule: Rule) -> RuleState:
    return RuleState(
        status=rule.status,
        support_tasks=rule.support_tasks,
        support_failures=rule.support_failures,
    )


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else text)[:300]
