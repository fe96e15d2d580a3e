"""The search tools: start a tree, select a node, take small and large steps, read the tree."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from adaexplore_mcp.mcp_server.arguments import (
    Author,
    Code,
    NodeId,
    Note,
    PrecisionArg,
    SearchId,
    TaskRef,
    Tokens,
    tool,
)
from adaexplore_mcp.mcp_server.models import (
    NodeSelection,
    Released,
    SearchList,
    Step,
    TreeListing,
)
from adaexplore_mcp.mcp_server.progress import with_progress
from adaexplore_mcp.mcp_server.workbench import Workbench
from adaexplore_mcp.search_engine import BestKernel, Edit, NodeView, SearchInfo

MaxSteps = Annotated[
    int | None,
    Field(
        ge=1,
        le=100_000,
        description="Evaluated nodes before the search stops; the server's default when omitted.",
    ),
]
MaxWallS = Annotated[
    float | None,
    Field(gt=0, le=30 * 86400, description="Seconds the search may run; no limit when omitted."),
]
MaxTokens = Annotated[
    int | None,
    Field(ge=1, description="Model tokens the steps may report; no limit when omitted."),
]
TreeOffset = Annotated[int, Field(ge=0, description="The first node id to list.")]
TreeLimit = Annotated[
    int, Field(ge=1, le=5000, description="At most this many nodes (default 200).")
]
Seed = Annotated[
    int | None,
    Field(ge=0, lt=2**31, description="Seed of the small/large coin, to replay a search."),
]
Label = Annotated[str | None, Field(max_length=200, description="A name for the search.")]
Patches = Annotated[
    list[Edit],
    Field(
        min_length=1,
        max_length=50,
        description="Exact replacements applied in order, each to the result of the ones "
        "before: old_str must occur exactly once in the kernel (trailing whitespace aside).",
    ),
]
ParentId = Annotated[
    int | None,
    Field(
        ge=0,
        le=1_000_000,
        description="The node the new kernel hangs under: the one select_node gave (0, the "
        "root, when omitted).",
    ),
]
TaskFilter = Annotated[
    str | None, Field(max_length=4096, description="Only searches of this task (name or path).")
]
SearchLimit = Annotated[int, Field(ge=1, le=200, description="Most searches to list.")]


def register_search_tools(server: MCPServer, bench: Workbench) -> None:
    @tool(server, "Start a search", read_only=False, idempotent=False)
    async def start_search(
        task: TaskRef,
        max_steps: MaxSteps = None,
        max_wall_s: MaxWallS = None,
        max_tokens: MaxTokens = None,
        seed: Seed = None,
        label: Label = None,
        precision: PrecisionArg = None,
    ) -> SearchInfo:
        """Start an AdaExplore search on a task: a tree of kernels whose root (node 0) stands
        for the PyTorch reference and holds no kernel. Returns the search (its id, budget,
        usage, best node so far). Then loop until the budget is spent: select_node, then the
        step it asks for (apply_patch or regenerate); finally best_kernel. Several agents may
        work on one search at once."""
        return bench.start_search(
            task,
            max_steps=max_steps,
            max_wall_s=max_wall_s,
            max_tokens=max_tokens,
            seed=seed,
            label=label,
            precision=precision,
        )

    @tool(server, "List searches", read_only=True, idempotent=True)
    async def list_searches(task: TaskFilter = None, limit: SearchLimit = 20) -> SearchList:
        """The searches in this server's store, newest first, with their task, budget, usage
        and best node. Use it to find a search id again."""
        return bench.list_searches(task=task, limit=limit)

    @tool(server, "Select a node", read_only=False, idempotent=False)
    async def select_node(search_id: SearchId, author: Author = None) -> NodeSelection:
        """Pick the node to expand next (UCT over the tree) and the step to take there, with
        everything that step needs. action=small: revise node.code with apply_patch, guided by
        working_memory (the chain of kernels it grew from, each with the judge's feedback);
        a failed node's small step is a repair. action=large: write a whole new kernel,
        structurally different from the pool of the best correct kernels, with regenerate.
        rules are the active memory rules relevant to this node. The node is reserved for you
        (other agents get other nodes) until you take the step, call release, or the lease
        expires. Fails when the budget is spent: then call best_kernel."""
        return bench.select_node(search_id, author=author)

    @tool(server, "Apply a patch (small step)", read_only=False, idempotent=False)
    async def apply_patch(
        search_id: SearchId,
        node_id: NodeId,
        patches: Patches,
        ctx: Context,
        note: Note = None,
        tokens: Tokens = 0,
        author: Author = None,
    ) -> Step:
        """Small step: apply old_str/new_str edits to a node's kernel, evaluate the result and
        record it as the node's child. If an edit does not apply (old_str not found, or found
        several times) nothing is evaluated or recorded and the error shows the closest lines:
        fix the edit and call again. Returns the new node with the judge's full result
        (node.result), whether it is the best so far, the budget used, and memory (compile and
        runtime errors are recorded in the rule memory automatically). Reports progress;
        cancelling stops the evaluation and records nothing."""
        return await with_progress(
            ctx,
            lambda on_progress: bench.apply_patch(
                search_id,
                node_id,
                patches,
                note=note,
                tokens=tokens,
                author=author,
                on_progress=on_progress,
            ),
        )

    @tool(server, "Regenerate (large step)", read_only=False, idempotent=False)
    async def regenerate(
        search_id: SearchId,
        code: Code,
        ctx: Context,
        node_id: ParentId = None,
        note: Note = None,
        tokens: Tokens = 0,
        author: Author = None,
    ) -> Step:
        """Large step: evaluate a whole new kernel and record it as a child of node_id (the
        node select_node gave; the root when omitted). Write it to differ in structure from the
        pool select_node showed, not as a copy with small changes. Returns the new node with
        the judge's full result, whether it is the best so far, the budget used, and memory.
        Reports progress; cancelling stops the evaluation and records nothing."""
        return await with_progress(
            ctx,
            lambda on_progress: bench.regenerate(
                search_id,
                code,
                node_id,
                note=note,
                tokens=tokens,
                author=author,
                on_progress=on_progress,
            ),
        )

    @tool(server, "Release a node", read_only=False, idempotent=True)
    async def release(search_id: SearchId, node_id: NodeId) -> Released:
        """Give back a node select_node reserved for you when you will not take its step, so
        the search stops counting it against the budget and other agents can get it."""
        return bench.release(search_id, node_id)

    @tool(server, "Get the tree", read_only=True, idempotent=True)
    async def get_tree(
        search_id: SearchId, offset: TreeOffset = 0, limit: TreeLimit = 200
    ) -> TreeListing:
        """The search, compact: a row per node (id, parent, action, verdict, speedup, reward,
        visits) in creation order, and where the search stands (best node, steps used of the
        budget). Large trees come in pages: nodes offset..offset+limit-1, with node_count
        telling how many there are. get_node gives one node's code, edits and full judge
        result; the resource search://{search_id}/tree has every field of every node."""
        return TreeListing.of(bench.get_tree(search_id), offset=offset, limit=limit)

    @tool(server, "Get a node", read_only=True, idempotent=True)
    async def get_node(search_id: SearchId, node_id: NodeId) -> NodeView:
        """One node with everything recorded about it: its kernel (code; None for the root),
        the edits that made it, the judge's full result, its reward and statistics."""
        return bench.get_node(search_id, node_id)

    @tool(server, "Best kernel", read_only=False, idempotent=False)
    async def best_kernel(search_id: SearchId, ctx: Context, remeasure: bool = False) -> BestKernel:
        """The search's best correct kernel (node with code and result; None if no kernel is
        correct yet), chosen by the median runtime over every measurement of the top
        candidates. remeasure=true first evaluates each candidate a few more times (stored;
        reports progress), so one lucky timing cannot win and flaky kernels are ruled out."""
        planned = bench.remeasurements(search_id) if remeasure else 0
        return await with_progress(
            ctx,
            lambda on_progress: bench.best_kernel(
                search_id, remeasure=remeasure, on_progress=on_progress
            ),
            evaluations=max(planned, 1),
        )

    @tool(server, "Fork a search", read_only=False, idempotent=False)
    async def fork(
        search_id: SearchId, node_id: NodeId, max_steps: MaxSteps = None, label: Label = None
    ) -> SearchInfo:
        """A new search holding the path from the root to a node plus the node's whole subtree
        (renumbered), with a fresh budget: to continue from a good node when a search's budget
        is spent. forked_from.copied_as is the node's id in the new search."""
        return bench.fork(search_id, node_id, max_steps=max_steps, label=label)
