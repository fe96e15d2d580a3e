"""The driver's prompts say what its search's operator policy allows: the whole result in
Triton under the default, torch's library operators beside working Triton kernels under mixed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from adaexplore_mcp.driver import prompts
from adaexplore_mcp.judge import Status
from adaexplore_mcp.judge.policy import Ops
from adaexplore_mcp.search_engine import Action, MemoryEntry, NodeView
from adaexplore_mcp.tasks import get_bundled_task
from tests.ops_wording import assert_library_operators_allowed, assert_whole_result_in_triton

from .conftest import GELU

TASK = get_bundled_task("gelu")
SEARCH = "s1"
NODE = NodeView(
    id=1,
    parent_id=0,
    action=Action.LARGE,
    depth=1,
    status=Status.CORRECT,
    speedup=None,
    runtime_ms=None,
    reward=0.5,
    visits=1,
    value=0.5,
    children=[],
    author=None,
    created_at=0.0,
    code=GELU,
    edits=None,
    note=None,
    tokens=0,
    copied_from=None,
    result=None,
)
MEMORY = [
    MemoryEntry(
        node_id=1,
        action=Action.LARGE,
        edits=None,
        status=Status.CORRECT,
        speedup=None,
        reward=0.5,
        feedback="correct",
    )
]

# every prompt a strategy sends its writer, reviser or tuner, rendered under one policy
PROMPTS: dict[str, Callable[[Ops], str]] = {
    "large": lambda ops: prompts.large(TASK, SEARCH, 0, [], [], [], ops=ops),
    "revise": lambda ops: prompts.revise(TASK, SEARCH, NODE, MEMORY, [], [], ops=ops),
    "tune": lambda ops: prompts.tune(TASK, SEARCH, NODE, MEMORY, [], [], "1. fuse", ops=ops),
    "refine": lambda ops: prompts.refine(TASK, SEARCH, NODE, [], [], ops=ops),
}


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_under_the_default_policy_the_prompt_asks_for_the_whole_result_in_triton(
    name: str,
) -> None:
    assert_whole_result_in_triton(PROMPTS[name](Ops.TRITON))


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_under_the_mixed_policy_the_prompt_lets_library_operators_stay(name: str) -> None:
    assert_library_operators_allowed(PROMPTS[name](Ops.MIXED))
