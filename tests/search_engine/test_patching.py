import asyncio

import pytest

from adaexplore_mcp.search_engine import Edit, InvalidStep, NoChange, PatchError, apply_edits
from tests.search_engine.fakes import kernel, toy_task

CODE = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
"""


def test_an_edit_that_matches_once_is_applied():
    out = apply_edits(CODE, [Edit(old_str="x + y", new_str="x * y")])
    assert "tl.store(out_ptr + offs, x * y, mask=mask)" in out
    assert out.replace("x * y", "x + y") == CODE


def test_edits_apply_in_order_each_on_the_result_of_the_previous():
    edits = [
        Edit(old_str="BLOCK: tl.constexpr", new_str="BLOCK_SIZE: tl.constexpr"),
        Edit(old_str="pid * BLOCK +", new_str="pid * BLOCK_SIZE +"),
    ]
    out = apply_edits(CODE, edits)
    assert "BLOCK_SIZE: tl.constexpr" in out and "pid * BLOCK_SIZE +" in out


def test_trailing_whitespace_is_tolerated_on_either_side():
    spaced = CODE.replace("mask = offs < n\n", "mask = offs < n   \n")
    # the kernel has trailing spaces the edit lacks
    out = apply_edits(
        spaced, [Edit(old_str="mask = offs < n\n    x =", new_str="mask = offs < n\n    xx =")]
    )
    assert "    xx = tl.load" in out
    # the edit has trailing spaces the kernel lacks
    out = apply_edits(CODE, [Edit(old_str="mask = offs < n  \t\n", new_str="mask = offs <= n\n")])
    assert "mask = offs <= n\n" in out


def test_not_found_reports_the_edit_and_the_closest_lines_with_numbers():
    edits = [
        Edit(old_str="x + y", new_str="x - y"),
        Edit(old_str="    x = tl.load(x_ptr + offs, mask=msk)\n", new_str=""),
    ]
    with pytest.raises(PatchError) as caught:
        apply_edits(CODE, edits)
    (failure,) = caught.value.failures
    assert failure.index == 1 and failure.reason == "not_found" and failure.count == 0
    assert [(n.line, n.text.strip()) for n in failure.closest] == [
        (10, "x = tl.load(x_ptr + offs, mask=mask)")
    ]
    message = str(caught.value)
    assert "edit 1: old_str not found" in message and "  10| " in message


def test_ambiguous_reports_the_count_and_where_each_match_starts():
    with pytest.raises(PatchError) as caught:
        apply_edits(CODE, [Edit(old_str="mask=mask)", new_str="mask=mask, other=0.0)")])
    (failure,) = caught.value.failures
    assert failure.reason == "ambiguous" and failure.count == 3
    assert [n.line for n in failure.closest] == [10, 11, 12]
    assert "found 3 times (at lines 10, 11, 12)" in str(caught.value)


def test_overlapping_matches_are_ambiguous():
    with pytest.raises(PatchError) as caught:
        apply_edits("aaa\n", [Edit(old_str="aa", new_str="b")])
    assert caught.value.failures[0].count == 2


def test_every_failing_edit_is_reported_and_nothing_is_applied():
    edits = [
        Edit(old_str="", new_str="x"),
        Edit(old_str="x + y", new_str="x - y"),
        Edit(old_str="tl.load", new_str="tl.load2"),
        Edit(old_str="nowhere to be seen", new_str=""),
    ]
    with pytest.raises(PatchError) as caught:
        apply_edits(CODE, edits)
    assert [(f.index, f.reason) for f in caught.value.failures] == [
        (0, "empty"),
        (2, "ambiguous"),
        (3, "not_found"),
    ]


def test_a_patch_that_changes_nothing_is_refused():
    with pytest.raises(NoChange, match="unchanged"):
        apply_edits(CODE, [Edit(old_str="x + y", new_str="x + y")])
    with pytest.raises(NoChange, match="unchanged"):
        apply_edits(CODE, [])


def test_a_failed_patch_creates_no_node_and_spends_no_evaluation(engine, judge):
    search = engine.start_search(toy_task())
    first = asyncio.run(engine.regenerate(search.id, kernel(speed=2.0)))
    selection = engine.select_node(search.id)
    with pytest.raises(PatchError):
        asyncio.run(
            engine.apply_patch(search.id, first.node.id, [Edit(old_str="nope", new_str="")])
        )
    info = engine.get_search(search.id)
    assert info.node_count == 2 and info.usage.steps == 1 and len(judge.evaluated) == 1
    # the selection is still held: the agent may retry with a corrected patch
    assert info.usage.in_flight == 1 and selection.node.id in (0, first.node.id)


def test_the_root_cannot_be_patched(engine):
    search = engine.start_search(toy_task())
    with pytest.raises(InvalidStep, match="regenerate"):
        asyncio.run(engine.apply_patch(search.id, 0, [Edit(old_str="a", new_str="b")]))
