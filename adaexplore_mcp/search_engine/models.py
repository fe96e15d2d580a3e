"""The search engine's boundary types: what its methods take and return (and the MCP tools too)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from adaexplore_mcp.judge.result import EvalResult, Status
from adaexplore_mcp.search_engine.settings import SearchSettings


class Action(StrEnum):
    ROOT = "root"  # the task's reference: no kernel of its own
    SMALL = "small"  # a patch of the parent's kernel
    LARGE = "large"  # a whole new kernel


class Edit(BaseModel):
    """One exact replacement: ``old_str`` must occur exactly once in the kernel."""

    old_str: str = Field(description="Text to replace; must match once (trailing spaces aside).")
    new_str: str = Field(description="Its replacement.")


class Budget(BaseModel):
    max_steps: int = Field(ge=1, description="Evaluated nodes (re-measurements not counted).")
    max_wall_s: float | None = Field(
        default=None, gt=0, description="Seconds the search has been running; None: no limit."
    )
    max_tokens: int | None = Field(
        default=None, ge=1, description="Tokens the callers reported; None: no limit."
    )


class Usage(BaseModel):
    steps: int = Field(description="Evaluated nodes.")
    in_flight: int = Field(description="Selections and evaluations still outstanding.")
    evaluations: int = Field(description="Judge runs, re-measurements included.")
    wall_s: float = Field(description="Running time, excluding the time between a stop and resume.")
    tokens: int


class NodeSummary(BaseModel):
    """A node without its code: what a tree listing shows."""

    id: int
    parent_id: int | None
    action: Action
    depth: int
    status: Status | None = Field(description="None for the root.")
    speedup: float | None = Field(description="Against the search's reward baseline.")
    runtime_ms: float | None = Field(description="The first evaluation's median runtime.")
    median_ms: float | None = Field(
        default=None,
        description="Median runtime over the first evaluation and every correct "
        "re-measurement: what the reward and the best kernel are decided on.",
    )
    reward: float | None = Field(
        description="None for the root. Correct kernels score against the search's fastest "
        "(1 for it), so a reward falls as better kernels arrive."
    )
    visits: int
    value: float = Field(description="Mean reward over the node's subtree (0 when unvisited).")
    children: list[int]
    author: str | None
    created_at: float


class NodeView(NodeSummary):
    """A node with everything recorded about it."""

    code: str | None = Field(description="None for the root, which holds the task's reference.")
    edits: list[Edit] | None = Field(description="The patch that made a small-step node.")
    note: str | None
    tokens: int
    copied_from: int | None = Field(description="The node's id in the search it was forked from.")
    result: EvalResult | None


class MemoryEntry(BaseModel):
    """One kernel of a small step's working memory, with the judge's feedback on it."""

    node_id: int
    action: Action
    edits: list[Edit] | None = Field(description="The patch that made a small-step node.")
    status: Status
    speedup: float | None
    reward: float
    feedback: str = Field(description="What the judge said, condensed.")
    note: str | None = Field(
        default=None, description="The note the step was sent with (its intent), trimmed."
    )
    output_tail: str | None = Field(
        default=None,
        description="The last lines the kernel printed (its own timings, say), trimmed.",
    )


class PoolEntry(BaseModel):
    """One kernel of a large step's pool of diverse correct kernels."""

    node_id: int
    code: str
    speedup: float | None
    runtime_ms: float | None
    reward: float
    max_similarity: float = Field(description="Highest similarity to a better pool member.")


class Selection(BaseModel):
    """What ``select_node`` hands a worker: a node, the step to take and its context."""

    search_id: str
    node: NodeView
    action: Action = Field(description="small: call apply_patch; large: call regenerate.")
    reason: str
    working_memory: list[MemoryEntry] = Field(
        description="Small step: the chain from the nearest large-step ancestor, oldest first."
    )
    pool: list[PoolEntry] = Field(description="Large step: diverse best correct kernels.")
    lease_expires_at: float = Field(description="Until then the node carries virtual loss.")
    usage: Usage
    budget: Budget


class StepResult(BaseModel):
    """The node an ``apply_patch`` or ``regenerate`` created."""

    search_id: str
    node: NodeView
    improved: bool = Field(description="The new node is now the search's best kernel.")
    best_node_id: int | None
    usage: Usage
    exhausted: str | None = Field(description="Which budget is now spent, if any.")
    reused: bool = Field(
        default=False,
        description="The search already held this exact kernel (under any parent): that node "
        "is returned, nothing was evaluated and no step was spent.",
    )


class ForkOrigin(BaseModel):
    search_id: str = Field(description="The search this one was forked from.")
    node_id: int = Field(description="The node it was forked at, as numbered there.")
    copied_as: int = Field(description="That node's id in this search.")


class SearchInfo(BaseModel):
    id: str
    task: str
    task_hash: str
    label: str | None
    created_at: float
    root: NodeSummary
    node_count: int
    correct_count: int
    best: NodeSummary | None = Field(
        description="Highest reward: the correct kernel with the lowest median runtime over "
        "its measurements (the one best_kernel chooses)."
    )
    budget: Budget
    usage: Usage
    exhausted: str | None = Field(description="steps | wall_clock | tokens, or None.")
    forked_from: ForkOrigin | None
    settings: SearchSettings


class TreeView(BaseModel):
    search: SearchInfo
    nodes: list[NodeSummary] = Field(description="Every node, in creation order.")


class Measurement(BaseModel):
    node_id: int
    status: Status
    runtime_ms: float | None
    speedup: float | None
    device: str | None
    created_at: float


class Candidate(BaseModel):
    """A kernel considered for the best: all its timings and their median."""

    node_id: int
    samples_ms: list[float] = Field(description="The first evaluation's, then re-measurements.")
    median_ms: float | None
    speedup: float | None = Field(description="Median over its correct measurements.")
    disqualified: str | None = Field(description="Why a re-measurement ruled it out.")


class BestKernel(BaseModel):
    search_id: str
    node: NodeView | None = Field(description="None when no kernel is correct yet.")
    decided_by: str = Field(
        description="median_runtime (over every measurement of the top candidates) or reward "
        "(timing not meaningful, as on the CPU)."
    )
    candidates: list[Candidate]


class SearchExport(BaseModel):
    """A whole search as JSON: settings, every node with code and result, every measurement."""

    format: str = "adaexplore-search/1"
    search: SearchInfo
    nodes: list[NodeView]
    measurements: list[Measurement]
