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


# -- outcomes that say what happened ------------------------------------------------------------


def test_a_recorded_failure_given_the_rule_it_already_stands_under_is_a_duplicate(tmp_path):
    """evaluate_kernel filed the failure under the starter rule; the agent then reports it
    again with that rule in its own words: nothing is merged, nothing new is recorded."""
    memory = memory_in(tmp_path, starter=True)
    report = starter_failure("probe-22-dot-on-vectors")
    filed = add(memory, report)
    assert filed.outcome == "clustered"
    again = add(memory, report, "You cannot call tl.dot on 1-D blocks.")
    assert again.outcome == "duplicate" and again.duplicate
    assert again.rule.id == filed.rule.id
    assert again.rule.support_failures == filed.rule.support_failures
    assert "merged" not in again.message and f"rule {filed.rule.id}" in again.message
    assert memory.failures(limit=1)[0].rule_ids == [filed.rule.id]


def test_the_same_words_as_an_existing_rule_are_that_rule_not_a_merge(memory):
    rule = "You cannot call torch functions inside a @triton.jit kernel."
    first = add(memory, unrelated_failure("gelu"), rule)
    same = add(
        memory, unrelated_failure("softmax"), rule.upper().replace("YOU CANNOT", "You cannot")
    )
    assert same.outcome == "existing_rule"
    assert same.rule.id == first.rule.id and same.rule.support_tasks == 2
    assert "merged" not in same.message
    reworded = add(
        memory,
        unrelated_failure("layernorm"),
        "You cannot call a torch function inside @triton.jit kernels.",
    )
    assert reworded.outcome == "merged" and reworded.rule.id == first.rule.id


def test_a_failure_recorded_without_a_rule_can_be_given_one_later(memory):
    report = unrelated_failure("gelu")
    assert add(memory, report).outcome == "no_rule"
    filed = add(memory, report, "You cannot call torch functions inside a @triton.jit kernel.")
    assert filed.outcome == "new_rule" and filed.duplicate
    assert filed.rule.support_failures == 1
    assert add(memory, report, filed.rule.text).outcome == "duplicate"


def test_the_result_is_what_the_store_holds_afterwards(memory):
    for task in ("a", "b", "c"):
        result = add(
            memory,
            unrelated_failure(task),
            "You cannot call torch.exp inside a @triton.jit kernel.",
        )
        assert result.rule == memory.rule(result.rule.id)
    assert result.activated and "now active" in result.message


def test_a_model_that_could_not_be_asked_is_not_said_to_have_found_nothing(tmp_path):
    class Broken(ScriptedDistiller):
        async def extract_rule(self, failures):
            raise ConnectionError("model unreachable")

    result = add(memory_in(tmp_path, Broken()), unrelated_failure("gelu"))
    assert result.outcome == "no_rule"
    assert "no prohibited action" not in result.message
    assert "model unreachable" in result.message


def test_a_rule_tied_to_one_kernel_says_it_never_activates(memory):
    result = add(
        memory,
        FailureReport(task="a", code="x_row_ptr = 1", error="ValueError: boom here"),
        "You cannot multiply x_row_ptr by the stride.",
    )
    assert result.rule.kernel_specific
    assert "never" in result.message and "1/3" not in result.message


def test_support_for_a_retired_rule_says_it_stays_out_of_prompts(memory):
    rule, _ = memory.add_rule("You cannot call torch functions inside a @triton.jit kernel.")
    memory.retire(rule.id)
    result = add(memory, unrelated_failure("gelu"), rule.text)
    assert result.rule.status.value == "retired" and "retired" in result.message
    assert "never injected" in result.message
