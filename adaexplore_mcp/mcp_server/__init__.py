"""The MCP server: the domain packages as MCP tools, resources and prompts, over stdio or
streamable HTTP. ``docs/mcp.md`` describes every tool."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adaexplore_mcp.mcp_server.answers import NextCall, NodeBrief, Step, Verdict
from adaexplore_mcp.mcp_server.error_codes import ErrorCode, ErrorInfo, ErrorPayload
from adaexplore_mcp.mcp_server.listing import SearchList, SearchRow, TreeListing, TreeRow
from adaexplore_mcp.mcp_server.models import (
    Evaluation,
    Health,
    Released,
    TaskDetail,
    TaskList,
    TaskSummary,
)
from adaexplore_mcp.mcp_server.prompting import (
    StepPrompts,
    extract_rule_prompt,
    large_step_variables,
    small_step_variables,
)
from adaexplore_mcp.mcp_server.selection import NodeSelection, PoolKernel, SelectedNode
from adaexplore_mcp.mcp_server.server import build_server
from adaexplore_mcp.mcp_server.workbench import Workbench

if TYPE_CHECKING:
    from adaexplore_mcp.mcp_server.http import HttpServer, http_app


def __getattr__(name: str) -> Any:
    # the HTTP transport (starlette, uvicorn) is imported only by who serves over HTTP, so a
    # stdio server answers initialize sooner
    if name in ("HttpServer", "http_app"):
        from adaexplore_mcp.mcp_server import http

        return getattr(http, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ErrorCode",
    "ErrorInfo",
    "ErrorPayload",
    "Evaluation",
    "Health",
    "HttpServer",
    "NextCall",
    "NodeBrief",
    "NodeSelection",
    "PoolKernel",
    "Released",
    "SearchList",
    "SearchRow",
    "SelectedNode",
    "Step",
    "StepPrompts",
    "TaskDetail",
    "TaskList",
    "TaskSummary",
    "TreeListing",
    "TreeRow",
    "Verdict",
    "Workbench",
    "build_server",
    "extract_rule_prompt",
    "http_app",
    "large_step_variables",
    "small_step_variables",
]
