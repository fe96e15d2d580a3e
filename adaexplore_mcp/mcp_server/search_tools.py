"""The search tools: start a tree, select a node, take small and large steps, read the tree."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from adaexplore_mcp.mcp_server.answers import Step
from adaexplore_mcp.mcp_server.arguments import (
    Author,
    Code,
    NodeId,
    Note,
    OpsArg,
    PrecisionArg,
    SearchId,
    TaskRef,
    Tokens,
    tool,
)
from adaexplore_mcp.mcp_server.clients import holder_of
from adaexplore_mcp.mcp_server.listing import SearchList, TreeListing
from adaexplore_mcp.mcp_server.models import Released
from adaexplore_mcp.mcp_server.progress import with_progress
from adaexplore_mcp.mcp_server.selection import NodeSelection
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
TreeLimit = Annotated[int, Field(ge=1, le=1000, description="Most nodes in one page.")]
Cursor = Annotated[
    str | None,
    Field(max_length=200, description="The next_cursor of the previous page; omit for the first."),
]
ContextTokens = Annotated[
    int | None,
    Field(
        ge=500,
        le=200_000,
        description="Budget of this answer in tokens (about 4 characters each): rules, the "
        "chain and the pool are cut to fit, the kernel to patch never is. The server's default "
        "(normally 4000) when omitted.",
    ),
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
SearchLimit = Annotated[int, Field(ge=1, le=100, description="Most searches in one page.")]


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
        ops: OpsArg = None,
    ) -> SearchInfo:
        """Start an AdaExplore search on a task: a tree of kernels whose root (node 0) stands
        for the PyTorch reference and holds no kernel. Returns the search (its id, budget,
        usage, best node so far). Then loop until the budget is spent: select_node, then the
        step it asks for (apply_patch or regenerate); finally best_kernel. Several agents may
        work on one search at once."""
        return bench.searches.start_search(
            task,
            max_steps=max_steps,
            max_wall_s=max_wall_s,
            max_tokens=max_tokens,
            seed=seed,
            label=label,
            precision=precision,
            ops=ops,
        )

    @tool(server, "List searches", read_only=True, idempotent=True)
    async def list_searches(
        task: TaskFilter = None, limit: SearchLimit = 10, cursor: Cursor = None
    ) -> SearchList:
        """The searches in this server's store, newest first, a row each (task, label, nodes,
        best node and speedup, steps of the budget), in pages (next_cursor). Use it to find a
        search id again."""
        return bench.searches.list_searches(task=task, limit=limit, cursor=cursor)

    @tool(server, "Select a node", read_only=False, idempotent=False)
    async def select_node(
        search_id: SearchId,
        ctx: Context,
        author: Author = None,
        context_tokens: ContextTokens = None,
    ) -> NodeSelection:
        """Pick the node to expand next (UCT over the tree) and the step to take there, with
        what that step needs, within a token budget (context says what was left out).
        action=small: revise node.code with apply_patch, guided by working_memory (the chain
        the kernel grew from: each node's edits, the judge's feedback, the note its step was
        sent with and the end of what its kernel printed); a failed node's
        small step is a repair. action=large: write a whole new kernel, structurally different
        from the pool of the best correct kernels, with regenerate. rules are the memory's
        rules most relevant to this node. The node is reserved for you until you take the
        step, call release, or the lease expires; selecting again gives your previous
        selection back (one per client and author), and leases lists every reservation.
        Fails when the budget is spent: then call best_kernel."""
        return bench.searches.select_node(
            search_id,
            author=author,
            holder=holder_of(ctx, bench.searches.release_holder),
            context_tokens=context_tokens,
        )

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
        fix the edit and call again. Returns the new node (its kernel's hash and size, not the
        code: kernel_uri or get_node reads it), the judge's verdict, whether it is the best so
        far, the budget used, memory (compile and runtime errors are recorded in the rule
        memory automatically) and next_call. A kernel the search already holds (under any node)
        is not evaluated again: that node comes back with reused=true and no step is spent.
        Reports progress at least every 5 s; the evaluation goes on and is recorded if the
        request is cancelled or times out, and the same call sent again joins it."""
        return await with_progress(
            ctx,
            lambda on_progress: bench.searches.apply_patch(
                search_id,
                node_id,
                patches,
                note=note,
                tokens=tokens,
                author=author,
                holder=holder_of(ctx, bench.searches.release_holder),
                on_progress=on_progress,
            ),
            interval_s=bench.settings.mcp.progress_interval_s,
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
        pool select_node showed, not as a copy with small changes. Returns the new node (hash
        and size of its kernel, not the code), the judge's verdict, whether it is the best so
        far, the budget used, memory and next_call; a kernel the search already holds (under
        any node) is not evaluated again: that node comes back with reused=true, no step spent.
        Reports progress at least every 5 s; the evaluation goes on and is recorded if the
        request is cancelled or times out, and the same call sent again joins it."""
        return await with_progress(
            ctx,
            lambda on_progress: bench.searches.regenerate(
                search_id,
                code,
                node_id,
                note=note,
                tokens=tokens,
                author=author,
                holder=holder_of(ctx, bench.searches.release_holder),
                on_progress=on_progress,
            ),
            interval_s=bench.settings.mcp.progress_interval_s,
        )

    @tool(server, "Release a node", read_only=False, idempotent=True)
    async def release(search_id: SearchId, node_id: NodeId, ctx: Context) -> Released:
        """Give back a node select_node reserved for you when you will not take its step, so
        the search stops counting it against the budget and other agents can get it (a client
        that disconnects gives back all of its reservations)."""
        return bench.searches.release(
            search_id, node_id, holder=holder_of(ctx, bench.searches.release_holder)
        )

    @tool(server, "Get the tree", read_only=True, idempotent=True)
    async def get_tree(
        search_id: SearchId, ctx: Context, limit: TreeLimit = 200, cursor: Cursor = None
    ) -> TreeListing:
        """The search, compact: a row per node (id, parent, action, verdict, speedup, reward,
        visits) in creation order, where the search stands (best node, steps used of the
        budget) and leases (who holds which node, and until when). Large trees come in pages
        (next_cursor). get_node gives one node's code, edits and full judge result; the
        resource search://{search_id}/tree has every field of every node."""
        return bench.searches.tree_listing(
            search_id,
            holder=holder_of(ctx, bench.searches.release_holder),
            limit=limit,
            cursor=cursor,
        )

    @tool(server, "Get a node", read_only=True, idempotent=True)
    async def get_node(search_id: SearchId, node_id: NodeId) -> NodeView:
        """One node with everything recorded about it: its kernel (code; None for the root),
        the edits that made it, the judge's full result, its reward and statistics."""
        return bench.searches.get_node(search_id, node_id)

    @tool(server, "Best kernel", read_only=False, idempotent=False)
    async def best_kernel(search_id: SearchId, ctx: Context, remeasure: bool = False) -> BestKernel:
        """The search's best correct kernel (node with code and result; None if no kernel is
        correct yet), chosen by the median runtime over every measurement of the top
        candidates. remeasure=true first evaluates each candidate a few more times (stored;
        reports progress), so one lucky timing cannot win and flaky kernels are ruled out."""
        planned = bench.searches.remeasurements(search_id) if remeasure else 0
        return await with_progress(
            ctx,
            lambda on_progress: bench.searches.best_kernel(
                search_id, remeasure=remeasure, on_progress=on_progress
            ),
            evaluations=max(planned, 1),
            interval_s=bench.settings.mcp.progress_interval_s,
        )

    @tool(server, "Fork a search", read_only=False, idempotent=False)
    async def fork(
        search_id: SearchId, node_id: NodeId, max_steps: MaxSteps = None, label: Label = None
    ) -> SearchInfo:
        """A new search holding the path from the root to a node plus the node's whole subtree
        (renumbered), with a fresh budget: to continue from a good node when a search's budget
        is spent. forked_from.copied_as is the node's id in the new search."""
        return bench.searches.fork(search_id, node_id, max_steps=max_steps, label=label)
