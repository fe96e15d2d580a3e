"""``select_node``'s answer, built within a token budget.

What a step needs, most needed first: the kernel to patch (a small step; sent whole, whatever
its size), the judge's feedback on it, the relevant rules, the chain it grew from (newest
first; an old entry loses its edits before it is dropped), and for a large step the pool of
diverse kernels (best first; a kernel that does not fit is listed without its code, which
kernel_uri reads). The answer says what it left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from adaexplore_mcp.judge import Status
from adaexplore_mcp.mcp_server.answers import CHARS_PER_TOKEN, NextCall, kernel_uri, tokens_of
from adaexplore_mcp.memory import PerformanceLesson, RuleHit
from adaexplore_mcp.search_engine import (
    Action,
    Budget,
    LeaseView,
    MemoryEntry,
    PoolEntry,
    Selection,
    Usage,
)


class SelectedNode(BaseModel):
    id: int
    parent_id: int | None
    action: Action
    depth: int
    status: Status | None = Field(description="None for the root.")
    speedup: float | None
    reward: float | None
    visits: int
    code: str | None = Field(
        description="The kernel to patch (small step). None for the root and for a large "
        "step, which writes a new kernel (kernel_uri reads this one)."
    )
    code_chars: int
    kernel_uri: str | None


class PoolKernel(BaseModel):
    """One of the best correct kernels that differ in structure: build on it, do not copy it."""

    node_id: int
    speedup: float | None
    runtime_ms: float | None
    reward: float
    max_similarity: float = Field(description="Highest similarity to a better pool member.")
    code: str | None = Field(description="None when left out for the budget: read kernel_uri.")
    code_chars: int
    kernel_uri: str


class ContextReport(BaseModel):
    budget_tokens: int = Field(description="The budget this answer was built within.")
    used_tokens: int = Field(description=f"Its estimated size ({CHARS_PER_TOKEN} chars a token).")
    omitted: list[str] = Field(description="What was left out for the budget, and where it is.")


class NodeSelection(BaseModel):
    """``select_node``: the node, the step to take there and what the step needs."""

    search_id: str
    action: Action = Field(description="small: call apply_patch; large: call regenerate.")
    reason: str
    node: SelectedNode
    working_memory: list[MemoryEntry] = Field(
        description="Small step: the chain the kernel grew from, oldest first, ending with this "
        "node; each with the edits that made it and the judge's feedback."
    )
    pool: list[PoolKernel] = Field(description="Large step: diverse best correct kernels.")
    rules: list[RuleHit] = Field(
        description="Active rules relevant to this node's kernel and task; breaking one fails."
    )
    performance_lessons: list[PerformanceLesson] = Field(
        default_factory=list,
        description="Measured changes that made kernels of similar tasks faster, under this "
        "search's policies and GPU: what changed and the speedups before and after.",
    )
    lease_expires_at: float = Field(
        description="Your selection holds the node until then (release gives it back)."
    )
    leases: list[LeaseView] = Field(description="Every outstanding selection of the search.")
    usage: Usage
    budget: Budget
    context: ContextReport
    next_call: NextCall


def build_selection(
    selection: Selection,
    rules: list[RuleHit],
    leases: list[LeaseView],
    budget_tokens: int,
    *,
    lessons: Sequence[PerformanceLesson] = (),
) -> NodeSelection:
    """The answer to ``select_node`` within ``budget_tokens`` (the kernel to patch is always
    sent, so a kernel larger than the budget makes a larger answer); performance lessons come
    after the rules and before the older working memory."""
    node, sid = selection.node, selection.search_id
    small = selection.action is Action.SMALL
    answer = NodeSelection(
        search_id=sid,
        action=selection.action,
        reason=selection.reason,
        node=SelectedNode(
            id=node.id,
            parent_id=node.parent_id,
            action=node.action,
            depth=node.depth,
            status=node.status,
            speedup=node.speedup,
            reward=node.reward,
            visits=node.visits,
            code=node.code if small else None,
            code_chars=len(node.code or ""),
            kernel_uri=kernel_uri(sid, node.id) if node.code is not None else None,
        ),
        working_memory=[],
        pool=[],
        rules=[],
        lease_expires_at=selection.lease_expires_at,
        leases=leases,
        usage=selection.usage,
        budget=selection.budget,
        context=ContextReport(budget_tokens=budget_tokens, used_tokens=0, omitted=[]),
        next_call=_next_call(sid, node.id, small),
    )
    room = budget_tokens - tokens_of(answer)
    omitted: list[str] = []

    chain = list(reversed(selection.working_memory))  # newest (this node) first
    if chain:  # the feedback on the kernel being patched is never left out
        answer.working_memory.append(chain[0])
        room -= tokens_of(chain[0])
    kept = 0
    for hit in rules:
        cost = tokens_of(hit)
        if cost > room:
            break
        answer.rules.append(hit)
        room -= cost
        kept += 1
    if kept < len(rules):
        omitted.append(f"{len(rules) - kept} less relevant rules (get_rules)")
    shown = 0
    for lesson in lessons:
        cost = tokens_of(lesson)
        if cost > room:
            break
        answer.performance_lessons.append(lesson)
        room -= cost
        shown += 1
    if shown < len(lessons):
        omitted.append(f"{len(lessons) - shown} less similar performance lessons")
    stripped, dropped = [], []
    for entry in chain[1:]:
        if tokens_of(entry) <= room:
            answer.working_memory.insert(0, entry)
            room -= tokens_of(entry)
            continue
        bare = entry.model_copy(update={"edits": None})
        if tokens_of(bare) <= room:
            answer.working_memory.insert(0, bare)
            room -= tokens_of(bare)
            stripped.append(entry.node_id)
        else:
            dropped.append(entry.node_id)
    if stripped:
        omitted.append(f"the edits of nodes {_ids(stripped)} (get_node)")
    if dropped:
        omitted.append(f"working-memory entries of nodes {_ids(dropped)} (get_node)")
    bare_pool = []
    for entry in selection.pool:
        kernel = _pool_kernel(sid, entry)
        if tokens_of(kernel) > room:
            kernel.code = None
            bare_pool.append(entry.node_id)
        answer.pool.append(kernel)
        room -= tokens_of(kernel)
    if bare_pool:
        omitted.append(f"the code of pool kernels {_ids(bare_pool)} (kernel_uri)")
    answer.context.omitted = omitted
    answer.context.used_tokens = tokens_of(answer)
    return answer


def _pool_kernel(search_id: str, entry: PoolEntry) -> PoolKernel:
    return PoolKernel(
        node_id=entry.node_id,
        speedup=entry.speedup,
        runtime_ms=entry.runtime_ms,
        reward=entry.reward,
        max_similarity=entry.max_similarity,
        code=entry.code,
        code_chars=len(entry.code),
        kernel_uri=kernel_uri(search_id, entry.node_id),
    )


def _next_call(search_id: str, node_id: int, small: bool) -> NextCall:
    if small:
        return NextCall(
            tool="apply_patch",
            arguments={"search_id": search_id, "node_id": node_id},
            why="add patches: old_str/new_str edits of node.code, guided by working_memory "
            "and rules (the small_step prompt renders this context)",
        )
    return NextCall(
        tool="regenerate",
        arguments={"search_id": search_id, "node_id": node_id},
        why="add code: a whole new kernel, structurally different from the pool (the "
        "large_step prompt renders this context)",
    )


def _ids(ids: list[int]) -> str:
    return ", ".join(str(i) for i in sorted(ids))
