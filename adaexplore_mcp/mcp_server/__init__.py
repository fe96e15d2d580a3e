"""The MCP server: the domain packages as MCP tools, resources and prompts, over stdio or
streamable HTTP. ``docs/mcp.md`` describes every tool."""

from adaexplore_mcp.mcp_server.error_codes import ErrorCode, ErrorInfo, ErrorPayload
from adaexplore_mcp.mcp_server.http import HttpServer, http_app
from adaexplore_mcp.mcp_server.models import (
    Evaluation,
    Health,
    NodeSelection,
    Released,
    SearchList,
    Step,
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
from adaexplore_mcp.mcp_server.server import build_server
from adaexplore_mcp.mcp_server.workbench import Workbench

__all__ = [
    "ErrorCode",
    "ErrorInfo",
    "ErrorPayload",
    "Evaluation",
    "Health",
    "HttpServer",
    "NodeSelection",
    "Released",
    "SearchList",
    "Step",
    "StepPrompts",
    "TaskDetail",
    "TaskList",
    "TaskSummary",
    "Workbench",
    "build_server",
    "extract_rule_prompt",
    "http_app",
    "large_step_variables",
    "small_step_variables",
]
