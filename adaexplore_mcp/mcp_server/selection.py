"""``select_node``'s answer, built within a token budget.

What a step needs, most needed first: the kernel to patch (a small step; sent whole, whatever
its size), the judge's feedback on it with the agent's note and the kernel's printed output,
the relevant rules, the chain it grew from (every entry's verdict, newest first; then the
notes, the printed output and the edits, each newest first, so the oldest entries lose them
first and are dropped last of all), and for a large step the pool of
diverse kernels (best first; a kernel that does not fit is listed without its code, which
kernel_uri reads). The answer says what it left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TypeVar

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
        "node; each with the edits that made it, the judge's feedback, the note the step was "
        "sent with and the end of what its kernel printed."
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
    answer.rules, room = _take_within(rules, room)
    if len(answer.rules) < len(rules):
        omitted.append(f"{len(rules) - len(answer.rules)} less relevant rules (get_rules)")
    answer.performance_lessons, room = _take_within(lessons, room)
    if len(answer.performance_lessons) < len(lessons):
        left = len(lessons) - len(answer.performance_lessons)
        omitted.append(f"{left} less similar performance lessons")
    kept_chain, left_out, room = _fit_chain(chain[1:], room)
    answer.working_memory[:0] = kept_chain
    omitted += left_out
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


# What an older entry of the chain gives up for the budget, the least useful first: its edits
# (get_node has them), then what its kernel printed, then the agent's note on it.
_PARTS = ("edits", "output_tail", "note")
_LEFT_OUT = {
    "note": "the notes of nodes {} (get_node)",
    "output_tail": "the printed output of nodes {} (get_node)",
    "edits": "the edits of nodes {} (get_node)",
}
_DROPPED = "working-memory entries of nodes {} (get_node)"


T = TypeVar("T", bound=BaseModel)


def _take_within(items: Sequence[T], room: int) -> tuple[list[T], int]:
    """The leading ``items`` that fit in ``room`` tokens (in order, stopping at the first that
    does not), and the room left."""
    taken: list[T] = []
    for item in items:
        cost = tokens_of(item)
        if cost > room:
            break
        taken.append(item)
        room -= cost
    return taken, room


def _fit_chain(older: list[MemoryEntry], room: int) -> tuple[list[MemoryEntry], list[str], int]:
    """The older entries of the chain (given newest first) that fit in ``room``, oldest first,
    what was left out and the room that remains. Every entry that fits gets its verdict before
    any entry gets more; then notes, printed output and edits are added back in that order,
    each to the newest entries first, so the oldest lose the most."""
    bare = {part: None for part in _PARTS}
    # What is left out is named in the answer too: room for the longest such report is set
    # aside first (an entry is either dropped or loses up to every part).
    every = _ids([entry.node_id for entry in older])
    worst = [_LEFT_OUT[part].format(every) for part in _PARTS] + [_DROPPED.format(every)]
    reserve = tokens_of(json.dumps(worst)) if older else 0
    room -= reserve
    kept: list[MemoryEntry] = []
    dropped: list[int] = []
    for entry in older:
        skeleton = entry.model_copy(update=bare)
        cost = tokens_of(skeleton.model_dump_json() + ",")  # the comma that joins the list
        if cost <= room:
            kept.append(skeleton)
            room -= cost
        else:
            dropped.append(entry.node_id)
    full = {entry.node_id: entry for entry in older}
    missing: dict[str, list[int]] = {part: [] for part in _PARTS}
    for part in reversed(_PARTS):  # note first, edits last
        for i, entry in enumerate(kept):
            value = getattr(full[entry.node_id], part)
            if value is None:
                continue
            richer = entry.model_copy(update={part: value})
            # rounded up on the difference, so the sum never undercounts the whole
            extra = -(
                -(len(richer.model_dump_json()) - len(entry.model_dump_json())) // CHARS_PER_TOKEN
            )
            if extra <= room:
                kept[i] = richer
                room -= extra
            else:
                missing[part].append(entry.node_id)
    left_out = [_LEFT_OUT[part].format(_ids(missing[part])) for part in _PARTS if missing[part]]
    if dropped:
        left_out.append(_DROPPED.format(_ids(dropped)))
    room += reserve - (tokens_of(json.dumps(left_out)) if left_out else 0)
    return list(reversed(kept)), left_out, room


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
