"""The MCP server: a ``Workbench`` wired to tools, resources and prompts.

    server = build_server(Workbench(open_app(Settings())))
    server.run()                       # stdio; see http.py for streamable HTTP

Nothing here holds state of its own: every handler is a closure over the workbench it was
built with, and the lifespan stops the workbench's judge when the transport shuts down.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer

import adaexplore_mcp
from adaexplore_mcp.mcp_server.errors import CodedServer
from adaexplore_mcp.mcp_server.prompt_handlers import register_prompts
from adaexplore_mcp.mcp_server.resources import register_resources
from adaexplore_mcp.mcp_server.search_tools import register_search_tools
from adaexplore_mcp.mcp_server.tools import register_tools
from adaexplore_mcp.mcp_server.workbench import Workbench

NAME = "adaexplore"

INSTRUCTIONS = """\
adaexplore optimizes GPU kernels: a task is a PyTorch reference (get_task), you write Triton
kernels (a Python module defining class ModelNew), and a judge you cannot fool checks each one
against the reference and times it against eager PyTorch and torch.compile.

A search (AdaExplore) is a tree of kernels. Loop: select_node tells you which node to expand and
whether to take a small step (apply_patch: edit that kernel) or a large step (regenerate: write a
new, structurally different kernel), with the context the step needs and the rules learned from
earlier failures; each step is evaluated and recorded as a node. best_kernel gives the result.
evaluate_kernel judges a single kernel outside any search. Compile and runtime failures feed a
shared memory of "You cannot ..." rules (get_rules, add_failure).
"""


def build_server(workbench: Workbench, *, close_on_shutdown: bool = True) -> MCPServer:
    """The server over ``workbench``. With ``close_on_shutdown`` (the default) the judge is
    stopped when the transport shuts down; a caller that owns the workbench and connects
    several clients one after another passes False and closes it itself."""

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[dict]:
        try:
            yield {}
        finally:
            if close_on_shutdown:
                await workbench.close()

    server = CodedServer(
        NAME,
        title="adaexplore-mcp",
        description="Optimize GPU Triton kernels with the AdaExplore method.",
        instructions=INSTRUCTIONS,
        version=adaexplore_mcp.__version__,
        lifespan=lifespan,
        log_level=workbench.settings.mcp.log_level,
    )
    register_tools(server, workbench)
    register_search_tools(server, workbench)
    register_resources(server, workbench)
    register_prompts(server, workbench)
    return server
