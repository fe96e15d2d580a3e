"""The MCP server's settings (``Settings().mcp``): its transport and what its tools record and
answer."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

_RecordedVerdict = Literal["compile_error", "runtime_error", "incorrect", "timeout", "rejected"]


def _verdicts_recorded_by_default() -> list[_RecordedVerdict]:
    return ["compile_error", "runtime_error"]


class McpSettings(BaseModel):
    """``adaexplore-mcp serve``: the MCP server's transport and what its tools record."""

    transport: Literal["stdio", "http"] = Field(
        default="stdio",
        description="stdio (the client starts the server) or http (streamable HTTP at /mcp).",
    )
    host: str = Field(default="127.0.0.1", description="Address the HTTP transport listens on.")
    port: int = Field(default=8766, ge=0, le=65535, description="HTTP port; 0 picks a free one.")
    token: str | None = Field(
        default=None,
        description="Bearer token every HTTP request must carry; required to listen beyond "
        "loopback.",
    )
    record_failures: list[_RecordedVerdict] = Field(
        default_factory=_verdicts_recorded_by_default,
        description="Verdicts of evaluate_kernel, apply_patch and regenerate that are recorded "
        "in the rule memory automatically (JSON list).",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        default="WARNING", description="Logging to standard error."
    )
    context_tokens: int = Field(
        default=4000,
        ge=500,
        le=200_000,
        description="select_node's answer budget in estimated tokens when the client sets "
        "none (the kernel to patch is always sent whole).",
    )
    max_rules: int = Field(
        default=8, ge=0, le=100, description="Most rules a select_node answer carries."
    )
    rule_relevance: float = Field(
        default=0.25,
        ge=0.0,
        le=1.0,
        description="A rule goes into select_node's answer only if its relevance to the node is "
        "at least this fraction of the most relevant rule's (and above zero).",
    )
    progress_interval_s: float = Field(
        default=4.0,
        gt=0,
        le=5.0,
        description="Longest silence between progress notifications of an evaluation.",
    )
