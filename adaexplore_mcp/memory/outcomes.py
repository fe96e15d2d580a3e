"""What ``add_failure`` tells its caller. Each result is written from the rule as the store holds
it after the call, so the outcome and the sentence claim no more than happened."""

from __future__ import annotations

from adaexplore_mcp.memory.models import AddFailureResult, Outcome, Rule, RuleStatus
from adaexplore_mcp.memory.signature import Signature

_FILED = {
    "new_rule": "Failure filed under a new rule {id}",
    "merged": "The rule text restates rule {id} in other words; the failure now supports it",
    "existing_rule": "The rule text is rule {id} word for word; the failure now supports it",
    "clustered": "Failure clustered with earlier failures of the same signature under rule {id}",
}


def filed(
    failure_id: int,
    sig: Signature,
    rule: Rule,
    *,
    outcome: Outcome,
    duplicate: bool,
    activated: bool,
    threshold: int,
) -> AddFailureResult:
    """The failure was linked to ``rule`` by this call."""
    return AddFailureResult(
        failure_id=failure_id,
        signature=sig.key,
        duplicate=duplicate,
        outcome=outcome,
        rule=rule,
        activated=activated,
        message=(
            f"{_FILED[outcome].format(id=rule.id)} ({_state(rule, activated, threshold)}): "
            f"{rule.text}"
        ),
    )


def already_filed(
    failure_id: int, sig: Signature, rule: Rule | None, *, restated: bool
) -> AddFailureResult:
    """The same kernel had failed this way on this task, and this call linked nothing new."""
    where = ""
    if rule is not None:
        where = f" and stands under rule {rule.id}" + (
            ", which the rule text restates" if restated else ""
        )
    return AddFailureResult(
        failure_id=failure_id,
        signature=sig.key,
        duplicate=True,
        outcome="duplicate",
        rule=rule,
        slip=sig.slip,
        message=f"This kernel already failed this way on this task{where}; nothing new recorded.",
    )


def unfiled(failure_id: int, sig: Signature, *, duplicate: bool, why: str) -> AddFailureResult:
    """The failure is recorded (or was already) and stands under no rule; ``why`` says why."""
    recorded = "Failure already recorded" if duplicate else "Failure recorded"
    return AddFailureResult(
        failure_id=failure_id,
        signature=sig.key,
        duplicate=duplicate,
        outcome="no_rule",
        message=f"{recorded} without a rule: {why}.",
    )


def slipped(failure_id: int, sig: Signature, *, rule_given: bool) -> AddFailureResult:
    """The failure is a slip of its kernel: recorded, and kept out of every rule."""
    assert sig.slip is not None
    dropped = "; the rule given is not stored" if rule_given else ""
    return AddFailureResult(
        failure_id=failure_id,
        signature=sig.key,
        duplicate=False,
        outcome="no_rule",
        slip=sig.slip,
        message=(
            f"Failure recorded without a rule: {sig.slip}, a slip in this kernel, not a lesson "
            f"about Triton or PyTorch{dropped}."
        ),
    )


def _state(rule: Rule, activated: bool, threshold: int) -> str:
    if activated:
        return "now active"
    if rule.status is RuleStatus.RETIRED:
        return "retired: never injected into prompts again"
    if rule.kernel_specific:
        return "tied to one kernel: kept as a candidate, never activated"
    if rule.status is RuleStatus.ACTIVE:
        return f"active, {rule.support_tasks} tasks"
    return f"candidate, {rule.support_tasks}/{threshold} tasks"
