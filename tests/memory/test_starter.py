"""The starter memory: curated rules, each backed by failures that were actually recorded."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from adaexplore_mcp.memory import (
    FailureReport,
    Provenance,
    RuleStatus,
    failure_signature,
    kernel_specific_reason,
)
from adaexplore_mcp.memory.rule_text import clean
from adaexplore_mcp.memory.starter import load_starter
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import resolve_task

from .conftest import memory_in

RULES, EVIDENCE = load_starter()


def test_every_starter_rule_is_general_and_backed_by_a_recorded_failure():
    assert len(RULES) >= 20
    for rule in RULES:
        assert clean(rule.text) == rule.text
        assert kernel_specific_reason(rule.text) is None, rule.text
        records = [r for eid in rule.evidence for r in EVIDENCE[eid]]
        assert any(r.is_failure for r in records), rule.text


def test_both_environments_are_recorded():
    devices = {r.environment.interpreter for records in EVIDENCE.values() for r in records}
    assert devices == {True, False}


def test_installing_gives_active_rules_linked_to_their_evidence(tmp_path):
    memory = memory_in(tmp_path, starter=True)
    active = memory.rules([RuleStatus.ACTIVE])
    assert len(active) == len(RULES)
    assert {r.provenance for r in active} == {Provenance.STARTER}
    assert all(r.support_failures >= 1 for r in active)
    failures = memory.failures()
    assert failures and all(f.origin.startswith("starter:") for f in failures)


def test_installing_twice_adds_nothing_and_a_retired_rule_stays_retired(tmp_path):
    memory = memory_in(tmp_path, starter=True)
    first = memory.rules()
    memory.retire(first[0].id)
    with Store(tmp_path / "db.sqlite3").connect() as conn:  # as if a new version shipped
        conn.execute("DELETE FROM memory_meta WHERE key = 'starter'")
    again = memory_in(tmp_path, starter=True)
    assert len(again.rules()) == len(first)
    assert len(again.failures()) == len(memory.failures())
    assert again.rule(first[0].id).status is RuleStatus.RETIRED


def test_a_new_failure_of_a_starter_mistake_clusters_under_its_rule(tmp_path):
    memory = memory_in(tmp_path, starter=True)
    record = next(r for r in EVIDENCE["probe-22-dot-on-vectors"] if r.environment.interpreter)
    renamed = record.code.replace("matvec_kernel", "my_matvec")
    result = asyncio.run(
        memory.add_failure(
            FailureReport(
                task="other_task",
                code=renamed,
                error=record.error,
                error_type=record.error_type,
                verdict=record.status,
            )
        )
    )
    assert result.outcome == "clustered"
    assert result.rule.text.startswith("You cannot call tl.dot on 1-D blocks")


@pytest.mark.parametrize(
    "probe",
    [
        "probe-01-arange-non-pow2",
        "probe-08-dot-mixed-dtypes",
        "probe-22-dot-on-vectors",
        "probe-24-fp16-math-function",
    ],
)
def test_the_interpreter_and_the_gpu_compiler_give_one_signature(probe):
    """Recorded on the CPU interpreter and on an H200: the GPU compiler drops the inner
    exception's type, which once split every compile error in two."""
    interpreter, gpu = (
        next(r for r in EVIDENCE[probe] if r.environment.interpreter is flag)
        for flag in (True, False)
    )
    assert failure_signature(interpreter.report()).key == failure_signature(gpu.report()).key


@pytest.mark.slow
def test_the_interpreter_evidence_still_reproduces(cpu_judge):
    """Every failing interpreter record, run again, fails with the same verdict."""
    records = [
        r
        for rs in EVIDENCE.values()
        for r in rs
        if r.environment.interpreter
        and r.is_failure
        and r.origin == "probe"
        and not getattr(r, "code_is_excerpt", False)
    ]
    assert len(records) >= 15

    def rerun(record):
        return record, cpu_judge.evaluate(resolve_task(record.task), record.code)

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(rerun, records))
    changed = [
        (r.id, r.status, result.status) for r, result in results if result.status != r.status
    ]
    assert changed == []
