import asyncio

import pytest

from adaexplore_mcp.memory import (
    FailureReport,
    RulesFileError,
    RuleStatus,
    export_rules,
    import_rules,
)

from .conftest import GLOBAL_RULE, global_read_failure, memory_in

ARANGE = "You cannot give tl.arange a range that is not a power of two; round up and mask the tail."


def populated(tmp_path):
    memory = memory_in(tmp_path / "a")
    for task in ("gelu", "softmax", "layernorm"):
        asyncio.run(memory.add_failure(global_read_failure(task, f"NAME_{task}", 3), GLOBAL_RULE))
    asyncio.run(
        memory.add_failure(FailureReport(task="gelu", code="", error="E: one two three"), ARANGE)
    )
    memory.add_rule("You cannot call torch functions inside a @triton.jit kernel.")  # curated
    retired, _ = memory.add_rule(
        "You cannot use tl.dot on int8 inputs without an int32 accumulator."
    )
    memory.retire(retired.id)
    asyncio.run(
        memory.add_failure(
            FailureReport(task="t", code="", error="E: a b c"),
            "You cannot add one to x_row_ptr on line 4.",
        )
    )
    return memory


def test_export_writes_support_and_curated_rules_and_skips_retired_and_specific(tmp_path):
    text = export_rules(populated(tmp_path))
    assert text.splitlines() == [
        f"{GLOBAL_RULE}||3",
        f"{ARANGE}||1",
        "You cannot call torch functions inside a @triton.jit kernel.",
    ]


def test_a_round_trip_loses_nothing(tmp_path):
    original = populated(tmp_path)
    text = export_rules(original)
    copy = memory_in(tmp_path / "b")
    report = import_rules(copy, text)
    assert len(report.added) == 3 and report.merged == []
    assert export_rules(copy) == text
    statuses = {r.text: (r.status, r.support_tasks) for r in copy.rules()}
    assert statuses[GLOBAL_RULE] == (RuleStatus.ACTIVE, 3)
    assert statuses[ARANGE] == (RuleStatus.CANDIDATE, 1)


def test_importing_merges_and_never_double_counts(tmp_path):
    memory = populated(tmp_path)
    before = {r.id: r.support_tasks for r in memory.rules()}
    report = import_rules(memory, export_rules(memory))
    assert report.added == [] and len(report.merged) == 3
    assert {r.id: r.support_tasks for r in memory.rules()} == before
    # A file that saw the arange rule on more tasks raises its support, and activates it.
    import_rules(memory, f"{ARANGE}||4\n")
    arange = next(r for r in memory.rules() if r.text == ARANGE)
    assert (arange.support_tasks, arange.status) == (4, RuleStatus.ACTIVE)


def test_a_bad_file_imports_nothing_and_names_every_bad_line(tmp_path):
    memory = memory_in(tmp_path)
    text = f"# a comment\n{GLOBAL_RULE}\nAlways mask.\n{ARANGE}||many\n"
    with pytest.raises(RulesFileError) as caught:
        import_rules(memory, text)
    message = str(caught.value)
    assert "line 3" in message and "line 4" in message and "'many'" in message
    assert memory.rules() == []
