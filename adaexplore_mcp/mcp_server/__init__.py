"""The MCP server: the domain packages as MCP tools, resources and prompts, over stdio or
streamable HTTP. ``docs/mcp.md`` describes every tool.

Importing this package imports none of its modules (``adaexplore_mcp.lazy_exports``): the
settings (``mcp_server/settings.py``) are read without the MCP SDK, and a stdio server does not
import the HTTP transport (starlette, uvicorn), so it answers initialize sooner."""

from typing import TYPE_CHECKING

from adaexplore_mcp.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from adaexplore_mcp.mcp_server.answers import NextCall, NodeBrief, Step, Verdict
    from adaexplore_mcp.mcp_server.error_codes import ErrorCode, ErrorInfo, ErrorPayload
    from adaexplore_mcp.mcp_server.http import HttpServer, http_app
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ErrorCode": "error_codes",
        "ErrorInfo": "error_codes",
        "ErrorPayload": "error_codes",
        "Evaluation": "models",
        "Health": "models",
        "HttpServer": "http",
        "NextCall": "answers",
        "NodeBrief": "answers",
        "NodeSelection": "selection",
        "PoolKernel": "selection",
        "Released": "models",
        "SearchList": "listing",
        "SearchRow": "listing",
        "SelectedNode": "selection",
        "Step": "answers",
        "StepPrompts": "prompting",
        "TaskDetail": "models",
        "TaskList": "models",
        "TaskSummary": "models",
        "TreeListing": "listing",
        "TreeRow": "listing",
        "Verdict": "answers",
        "Workbench": "workbench",
        "build_server": "server",
        "extract_rule_prompt": "prompting",
        "http_app": "http",
        "large_step_variables": "prompting",
        "small_step_variables": "prompting",
    },
)

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
