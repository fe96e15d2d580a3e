import asyncio

import pytest

from adaexplore_mcp.memory import (
    FailureReport,
    RulesFileError,
    RuleStatus,
    export_rules,
    import_rules,
    parse_support,
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


@pytest.mark.parametrize(
    ("figure", "support"),
    [("7", 7), ("34.0", 34), (" 9.0 ", 9), ("2.5", 3), ("1.49", 1), ("0.5", 1), ("0.4", 0)],
)
def test_a_decimal_support_rounds_to_the_nearest_whole_number_halves_up(figure, support):
    assert parse_support(figure) == support


@pytest.mark.parametrize(
    ("figure", "reason"),
    [
        ("-3", "negative"),
        ("-0.5", "negative"),
        ("many", "not a number"),
        ("nan", "not a number"),
        ("1e3", "not a number"),
        ("", "not a number"),
        ("3.0.1", "not a number"),
    ],
)
def test_a_negative_or_non_numeric_support_is_refused(figure, reason):
    with pytest.raises(ValueError, match=reason):
        parse_support(figure)


# Lines in the form of AdaExplore's released memory (general_memory_v1_200.txt).
FLOAT_CALL = "You cannot call tl.float32 as a function inside a Triton kernel."
CONTINUE = "You cannot use the 'continue' statement in a Triton kernel."
DICT_ARG = "You cannot pass a dict as an argument when launching a Triton kernel."
AT_LINE = (
    "You cannot have an `else:` at line 223 of the module source (SyntaxError: invalid syntax)."
)
OWN_NAME = "You cannot call tl.arange(0, BLOCK) inside the Triton kernel _mean_invstd_kernel."
ADAEXPLORE_MEMORY = (
    f"{FLOAT_CALL}||138.0\n{CONTINUE}||2.5\n{DICT_ARG}||1.0\n{AT_LINE}||79.0\n{OWN_NAME}||14.0\n"
)


def test_adaexplore_memory_imports_with_rounded_supports_and_one_kernel_rules_inactive(tmp_path):
    memory = memory_in(tmp_path)
    report = import_rules(memory, ADAEXPLORE_MEMORY)
    assert len(report.added) == 5
    rules = {r.text: r for r in memory.rules()}
    state = {text: (r.status, r.support_tasks) for text, r in rules.items()}
    assert state[FLOAT_CALL] == (RuleStatus.ACTIVE, 138)
    assert state[CONTINUE] == (RuleStatus.ACTIVE, 3)
    assert state[DICT_ARG] == (RuleStatus.CANDIDATE, 1)
    # Supported on 79 and 14 tasks, yet tied to one kernel: kept, never active.
    assert state[AT_LINE] == (RuleStatus.CANDIDATE, 79)
    assert state[OWN_NAME] == (RuleStatus.CANDIDATE, 14)
    assert set(report.tied_to_one_kernel) == {rules[AT_LINE].id, rules[OWN_NAME].id}
    # Export writes whole numbers and leaves the one-kernel rules out.
    assert export_rules(memory).splitlines() == [
        f"{FLOAT_CALL}||138",
        f"{CONTINUE}||3",
        f"{DICT_ARG}||1",
    ]
