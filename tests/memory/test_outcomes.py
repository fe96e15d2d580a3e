"""What ``add_failure`` reports, checked against what the store holds afterwards: a restated
rule supports the rule it restates (starter rules included), and the outcome names what
happened."""

import asyncio

from adaexplore_mcp.memory import FailureReport, Provenance
from adaexplore_mcp.memory.starter import load_starter

from .conftest import ScriptedDistiller, memory_in

RULES, EVIDENCE = load_starter()


def add(memory, report, rule=None):
    return asyncio.run(memory.add_failure(report, rule=rule))


def starter_text(prefix: str) -> str:
    return next(r.text for r in RULES if r.text.startswith(prefix))


def starter_failure(probe: str, task: str = "other_task") -> FailureReport:
    """The interpreter's record of a starter mistake, as if another task had made it."""
    record = next(r for r in EVIDENCE[probe] if r.environment.interpreter)
    return FailureReport(
        task=task,
        code=record.code.replace("kernel(", "kernel_again("),
        error=record.error,
        error_type=record.error_type,
        verdict=record.status,
    )


def unrelated_failure(task: str) -> FailureReport:
    """A failure whose signature no rule stands under yet (each task's error is its own)."""
    return FailureReport(task=task, code="y = 1", error=f"ValueError: {task} went wrong somehow")


def test_a_starter_rule_restated_without_its_remedy_supports_the_starter_rule(tmp_path):
    """Starter rules carry a remedy after ';' that a restatement leaves out; the prohibition
    before it is what makes two rules the same."""
    memory = memory_in(tmp_path, starter=True)
    before = len(memory.rules())
    starter = starter_text("You cannot call tl.dot on 1-D blocks")
    result = add(memory, unrelated_failure("matvec"), "You cannot call tl.dot on 1-D blocks.")
    assert result.outcome == "merged"
    assert result.rule.text == starter and result.rule.provenance is Provenance.STARTER
    assert len(memory.rules()) == before
    assert "matvec" in memory.rule(result.rule.id).tasks


def test_a_restatement_of_the_rule_its_error_already_has_supports_that_rule(tmp_path):
    """The failure's signature already stands under the starter rule: a text that shares its
    words is that rule restated, with no model to ask."""
    memory = memory_in(tmp_path, starter=True)
    before = len(memory.rules())
    result = add(
        memory,
        starter_failure("probe-22-dot-on-vectors"),
        "You cannot pass vectors to tl.dot; it only multiplies matrices.",
    )
    assert result.outcome == "merged"
    assert result.rule.text == starter_text("You cannot call tl.dot on 1-D blocks")
    assert len(memory.rules()) == before


def test_shared_words_alone_do_not_merge_different_prohibitions(tmp_path):
    memory = memory_in(tmp_path, starter=True)
    before = len(memory.rules())
    result = add(memory, unrelated_failure("mm"), "You cannot call tl.dot on int8 blocks.")
    assert result.outcome == "new_rule"
    three_d = add(memory, unrelated_failure("bmm"), "You cannot call tl.dot on 3-D blocks.")
    assert three_d.outcome == "new_rule"
    assert len(memory.rules()) == before + 2


def test_the_model_is_asked_about_a_starter_rule_a_restatement_shares_a_prohibition_with(
    tmp_path,
):
    restated = "You cannot use tl.arange with a length that is not a power of 2."
    starter = starter_text("You cannot call tl.arange over a range")
    distiller = ScriptedDistiller(same={(restated, starter)})
    memory = memory_in(tmp_path, distiller, starter=True)
    result = add(memory, unrelated_failure("softmax2"), restated)
    assert result.outcome == "merged" and result.rule.text == starter
    assert distiller.judge_calls[0] == (restated, starter)
