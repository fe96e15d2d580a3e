"""Rules carry the policies and GPU they hold for; retrieval leaves out what a search denies."""

from __future__ import annotations

import asyncio

from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.memory import FailureReport
from adaexplore_mcp.memory.context import ANY, MemoryContext

from .conftest import GLOBAL_RULE, global_read_failure, memory_in

IEEE = 'pass input_precision="ieee"'
TF32_SEARCH = MemoryContext(precision=Precision.TF32, ops=Ops.TRITON, gpu_arch="sm_90")
STRICT_SEARCH = MemoryContext(precision=Precision.STRICT, ops=Ops.TRITON, gpu_arch="sm_90")
FP32_GEMM_QUERY = "tl.dot float32 GEMM accumulate misses tolerance input_precision"
_ALL = {"limit": 100, "token_budget": 1 << 20}


def _texts(answer) -> list[str]:
    return [hit.text for hit in answer.rules]


def test_the_starter_ieee_rule_holds_under_strict_only(tmp_path):
    memory = memory_in(tmp_path, starter=True)
    ieee = [rule for rule in memory.rules() if IEEE in rule.text]
    assert len(ieee) == 1 and ieee[0].context.precision is Precision.STRICT

    under_tf32 = _texts(memory.get_rules(FP32_GEMM_QUERY, context=TF32_SEARCH, **_ALL))
    under_strict = _texts(memory.get_rules(FP32_GEMM_QUERY, context=STRICT_SEARCH, **_ALL))
    assert not any(IEEE in text for text in under_tf32)
    assert any(IEEE in text for text in under_strict[:3])
    # the general rules stay under either policy
    assert len(under_tf32) == len(under_strict) - 1


def _wrong_values(task: str, precision: Precision, gpu_arch: str) -> FailureReport:
    return FailureReport(
        task=task,
        code=f"# a GEMM of {task}\nacc = tl.dot(a, b, acc)\n",
        error="Wrong values in output 0: 12 of 4096 elements outside atol=0.0001",
        verdict="incorrect",
        precision=precision,
        ops=Ops.TRITON,
        gpu_arch=gpu_arch,
    )


RULE = "You cannot let tl.dot round float32 operands when the reference is exact float32."


def test_a_rule_from_a_failure_records_the_policy_that_decided_it(tmp_path):
    memory = memory_in(tmp_path, threshold=1)
    result = asyncio.run(
        memory.add_failure(_wrong_values("gemm_a", Precision.TF32, "sm_90"), rule=RULE)
    )
    # a wrong result depends on the tolerance, so the precision policy is kept; the operator
    # policy decides only rejections
    assert result.rule.context == MemoryContext(precision=Precision.TF32, gpu_arch="sm_90")
    assert _texts(memory.get_rules(context=TF32_SEARCH)) == [RULE]
    assert _texts(memory.get_rules(context=STRICT_SEARCH)) == []
    on_an_a100 = TF32_SEARCH.model_copy(update={"gpu_arch": "sm_80"})
    assert _texts(memory.get_rules(context=on_an_a100)) == []
    assert _texts(memory.get_rules()) == [RULE]  # no context: nothing is filtered


def test_a_compile_error_on_the_interpreter_makes_a_general_rule(tmp_path):
    memory = memory_in(tmp_path, threshold=1)
    report = global_read_failure("softmax", "SCALE", 7).model_copy(
        update={"gpu_arch": "interpreter", "precision": Precision.TF32, "ops": Ops.MIXED}
    )
    result = asyncio.run(memory.add_failure(report, rule=GLOBAL_RULE))
    assert result.rule.context == ANY
    assert _texts(memory.get_rules(context=STRICT_SEARCH)) == [GLOBAL_RULE]


def test_support_under_another_policy_widens_the_rule(tmp_path):
    memory = memory_in(tmp_path, threshold=1)
    asyncio.run(memory.add_failure(_wrong_values("gemm_a", Precision.TF32, "sm_90"), rule=RULE))
    result = asyncio.run(
        memory.add_failure(_wrong_values("gemm_b", Precision.STRICT, "sm_90"), rule=RULE)
    )
    assert result.outcome == "existing_rule"
    assert result.rule.context == MemoryContext(gpu_arch="sm_90")
    assert _texts(memory.get_rules(context=STRICT_SEARCH)) == [RULE]


def test_a_curated_context_replaces_the_merged_rules(tmp_path):
    memory = memory_in(tmp_path)
    rule, _ = memory.add_rule(RULE)
    assert rule.context == ANY
    rule, created = memory.add_rule(RULE, context=MemoryContext(precision=Precision.STRICT))
    assert not created and rule.context.precision is Precision.STRICT
    assert _texts(memory.get_rules(context=TF32_SEARCH)) == []
