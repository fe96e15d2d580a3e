"""Resources: the same data as the tools, for clients that read rather than call."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from adaexplore_mcp.mcp_server.error_codes import ErrorCode
from adaexplore_mcp.mcp_server.errors import protocol_error, resource_errors
from adaexplore_mcp.mcp_server.workbench import Workbench
from adaexplore_mcp.memory import RuleStatus


def register_resources(server: MCPServer, bench: Workbench) -> None:
    # async handlers: they run on the event loop beside the tools, never in a worker thread

    @server.resource(
        "rules://active",
        name="active_rules",
        title="Active rules",
        description="Every active rule of the memory, one a line, broadest support first: "
        "what a kernel must not do.",
        mime_type="text/plain",
    )
    async def active_rules() -> str:
        rules = sorted(
            bench.memory.rules([RuleStatus.ACTIVE]), key=lambda r: (-r.support_tasks, r.id)
        )
        if not rules:
            return "(no active rules yet)\n"
        return "".join(
            f"- {rule.text} (rule {rule.id}; {rule.support_tasks} tasks)\n" for rule in rules
        )

    @server.resource(
        "search://{search_id}/tree",
        name="search_tree",
        title="A search's tree",
        description="The search and every node without code (get_tree as JSON).",
        mime_type="application/json",
    )
    async def search_tree(search_id: str) -> str:
        with resource_errors(f"search://{search_id}/tree"):
            return bench.searches.get_tree(search_id).model_dump_json(indent=2)

    @server.resource(
        "kernel://{search_id}/{node_id}",
        name="kernel",
        title="A node's kernel",
        description="The Triton kernel source of a node of a search.",
        mime_type="text/x-python",
    )
    async def kernel(search_id: str, node_id: str) -> str:
        uri = f"kernel://{search_id}/{node_id}"
        if not node_id.isdigit():
            raise protocol_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"node ids are numbers (0 is the root), not {node_id!r}",
                uri=uri,
            )
        with resource_errors(uri):
            node = bench.searches.get_node(search_id, int(node_id))
        if node.code is None:
            raise protocol_error(
                ErrorCode.NO_KERNEL,
                f"node {node_id} of search {search_id!r} is the root: it holds no kernel; "
                "the task's reference is task://<name>",
                uri=uri,
            )
        return node.code

    @server.resource(
        "task://{name}",
        name="task",
        title="A task's reference",
        description="The PyTorch reference source of a bundled task (class Model, get_inputs, "
        "get_init_inputs).",
        mime_type="text/x-python",
    )
    async def task(name: str) -> str:
        with resource_errors(f"task://{name}"):
            return bench.task(name).source
