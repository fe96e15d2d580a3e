import asyncio

import pytest

from adaexplore_mcp.memory import FailureReport, Provenance, RuleStatus, RuleTextError, UnknownRule

from .conftest import GLOBAL_RULE, ScriptedDistiller, global_read_failure, memory_in


def add(memory, report, rule=None):
    return asyncio.run(memory.add_failure(report, rule=rule))


def test_an_agent_rule_is_a_candidate_until_three_distinct_tasks_support_it(memory):
    first = add(memory, global_read_failure("gelu", "SCALE", 3), GLOBAL_RULE)
    assert first.outcome == "new_rule"
    assert first.rule.status is RuleStatus.CANDIDATE
    assert first.rule.provenance is Provenance.AGENT
    # Another kernel on the same task: more failures, not more tasks.
    again = add(memory, global_read_failure("gelu", "OTHER", 9))
    assert again.outcome == "clustered"
    assert (again.rule.support_tasks, again.rule.support_failures) == (1, 2)
    add(memory, global_read_failure("softmax", "LOG2E", 5))
    third = add(memory, global_read_failure("layernorm", "EPS", 7))
    assert third.activated and third.rule.status is RuleStatus.ACTIVE
    assert third.rule.tasks == ["gelu", "layernorm", "softmax"]
    assert memory.get_rules().rules[0].id == first.rule.id


def test_repeats_cluster_by_signature_without_any_model(memory):
    add(memory, global_read_failure("gelu", "SCALE", 3), GLOBAL_RULE)
    repeat = add(memory, global_read_failure("softmax", "LOG2E", 12))
    assert repeat.outcome == "clustered"
    assert repeat.rule.text == GLOBAL_RULE


def test_failures_recorded_before_a_rule_existed_join_it(memory):
    waiting = [
        add(memory, global_read_failure(task, f"CONST_{task}", 4)) for task in ("gelu", "softmax")
    ]
    assert all(r.outcome == "no_rule" and r.rule is None for r in waiting)
    filed = add(memory, global_read_failure("layernorm", "CONST_D", 4), GLOBAL_RULE)
    assert filed.rule.support_tasks == 3 and filed.activated


def test_the_same_kernel_failing_twice_adds_no_support(memory):
    report = global_read_failure("gelu", "SCALE", 3)
    add(memory, report, GLOBAL_RULE)
    again = add(memory, report)
    assert again.duplicate and again.outcome == "duplicate"
    assert again.rule.support_failures == 1


def test_a_rewording_with_the_same_words_merges(memory):
    add(memory, global_read_failure("gelu", "A", 3), GLOBAL_RULE)
    reworded = (
        "You cannot read module-level Python variables inside @triton.jit kernels unless they "
        "are tl.constexpr; pass them as constexpr arguments instead."
    )
    merged = add(
        memory,
        FailureReport(
            task="softmax", code="k = 1", error="NameError: other wording", verdict="compile_error"
        ),
        reworded,
    )
    assert merged.outcome == "merged"
    assert merged.rule.text == GLOBAL_RULE
    assert merged.rule.support_tasks == 2
    assert len(memory.rules()) == 1


def test_a_near_match_merges_only_when_the_model_calls_it_the_same(tmp_path):
    existing = "You cannot use tl.arange with a range that is not a power of two."
    near = "You cannot give tl.arange a length that is not a power of 2; round up and mask."
    distinct = "You cannot use tl.arange bounds that are not tl.constexpr values."
    distiller = ScriptedDistiller(same={(near, existing)})
    memory = memory_in(tmp_path, distiller)
    add(memory, FailureReport(task="a", code="", error="ValueError: x y z"), existing)
    merged = add(memory, FailureReport(task="b", code="", error="ValueError: p q r"), near)
    assert merged.outcome == "merged" and merged.rule.support_tasks == 2
    kept = add(memory, FailureReport(task="c", code="", error="ValueError: s t u"), distinct)
    assert kept.outcome == "new_rule"
    assert {pair[0] for pair in distiller.judge_calls} == {near, distinct}


def test_without_a_model_near_matches_stay_separate_rules(memory):
    add(
        memory,
        FailureReport(task="a", code="", error="ValueError: first unrelated error"),
        "You cannot use tl.arange with a range that is not a power of two.",
    )
    other = add(
        memory,
        FailureReport(task="b", code="", error="TypeError: second unrelated error"),
        "You cannot give tl.arange a length that is not a power of 2; round up and mask.",
    )
    assert other.outcome == "new_rule"


def test_the_model_distils_a_rule_when_the_agent_gives_none(tmp_path):
    distiller = ScriptedDistiller(rules={"global variable": GLOBAL_RULE, "CUDA error": None})
    memory = memory_in(tmp_path, distiller)
    filed = add(memory, global_read_failure("gelu", "SCALE", 3))
    assert filed.outcome == "new_rule" and filed.rule.provenance is Provenance.LLM
    # Its repeat clusters under that rule: the model is not asked again.
    add(memory, global_read_failure("softmax", "LOG2E", 8))
    assert len(distiller.extract_calls) == 1
    flaky = add(
        memory, FailureReport(task="gelu", code="x", error="CUDA error: an illegal instruction")
    )
    assert flaky.outcome == "no_rule" and "no prohibited action" in flaky.message


def test_a_failing_model_still_records_the_failure(tmp_path):
    class Broken(ScriptedDistiller):
        async def extract_rule(self, failures):
            raise ConnectionError("model unreachable")

    memory = memory_in(tmp_path, Broken())
    result = add(memory, global_read_failure("gelu", "SCALE", 3))
    assert result.outcome == "no_rule"
    assert len(memory.failures()) == 1


def test_a_bad_agent_rule_is_refused_and_nothing_is_stored(memory):
    with pytest.raises(RuleTextError, match="starting exactly 'You cannot'"):
        add(memory, global_read_failure("gelu", "S", 3), "Always use constexpr.")
    with pytest.raises(RuleTextError, match="one sentence"):
        add(memory, global_read_failure("gelu", "S", 3), "You cannot do this. Or that.")
    assert memory.failures() == []


def test_a_rule_tied_to_one_kernel_never_activates(memory):
    specific = "You cannot multiply x_row_ptr by the stride on line 12."
    for task in ("a", "b", "c", "d"):
        result = add(
            memory, FailureReport(task=task, code="x_row_ptr = 1", error="E: 1 2 3"), specific
        )
    assert result.rule.kernel_specific
    assert result.rule.support_tasks == 4
    assert result.rule.status is RuleStatus.CANDIDATE
    assert memory.get_rules().rules == []


def test_retired_rules_keep_their_evidence_and_leave_the_prompts(memory):
    rule, _ = memory.add_rule(GLOBAL_RULE)
    assert rule.status is RuleStatus.ACTIVE and rule.provenance is Provenance.MANUAL
    memory.retire(rule.id)
    assert memory.get_rules().rules == []
    # A new failure supporting it does not bring it back.
    again = add(memory, global_read_failure("gelu", "S", 3), GLOBAL_RULE)
    assert again.rule.status is RuleStatus.RETIRED


def test_unknown_rule_ids_say_how_to_find_one(memory):
    with pytest.raises(UnknownRule, match="rules list --all"):
        memory.rule(42)
    with pytest.raises(UnknownRule):
        memory.failures(rule_id=42)
