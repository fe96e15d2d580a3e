"""The codes of the errors the server reports on purpose: the contract a program keys on.

A message is for a model or a person and may be reworded; its code may not. A tool error comes
as a result with ``isError: true`` whose structured content is ``{"error": {"code", "message"}}``
(``ErrorPayload``) and whose text is ``"<code>: <message>"``, so a client that shows only text
still sees the code. A resource or prompt error is a protocol error whose ``data`` holds the same
``error`` object and whose message is the same text. docs/mcp.md says what each code means and
what to do about it. Anything without a code is a bug.

This module names the codes and their form only; ``errors.py`` maps the domain's exceptions to
them. A client (the driver) imports it without anything of the server's behind it.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class ErrorCode(StrEnum):
    # the call itself
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_TOOL = "unknown_tool"
    UNKNOWN_RESOURCE = "unknown_resource"
    # tasks
    INVALID_TASK = "invalid_task"
    # searches
    UNKNOWN_SEARCH = "unknown_search"
    UNKNOWN_NODE = "unknown_node"
    NO_KERNEL = "no_kernel"
    INVALID_STEP = "invalid_step"
    PATCH_NOT_APPLIED = "patch_not_applied"
    NO_CHANGE = "no_change"
    BUDGET_SPENT = "budget_spent"
    SEARCH_ERROR = "search_error"
    # the judge
    QUEUE_FULL = "queue_full"
    JUDGE_UNAVAILABLE = "judge_unavailable"
    JUDGE_FAILED = "judge_failed"
    # the rule memory
    INVALID_RULE = "invalid_rule"
    UNKNOWN_RULE = "unknown_rule"
    # prompts (the MCP prompts and the templates behind them)
    UNKNOWN_PROMPT = "unknown_prompt"


# between the code and the message in an error's text
_SEPARATOR = ": "


class ErrorInfo(BaseModel):
    """One error the server reported on purpose."""

    code: ErrorCode = Field(description="What went wrong, for a program (docs/mcp.md).")
    message: str = Field(description="What went wrong and what to do next, for a model.")

    @property
    def text(self) -> str:
        """The error as one text: the code, a colon and a space, the message."""
        return f"{self.code}{_SEPARATOR}{self.message}"

    @classmethod
    def from_text(cls, text: str) -> ErrorInfo | None:
        """The error a text in the form of ``text`` carries; None for any other text (a bug's,
        or a code this version does not know)."""
        code, separator, message = text.partition(_SEPARATOR)
        try:
            return cls(code=ErrorCode(code), message=message) if separator else None
        except ValueError:
            return None


class ErrorPayload(BaseModel):
    """A tool error's structured content; the ``data`` of a resource's or prompt's protocol
    error (there with the resource's ``uri`` beside it)."""

    error: ErrorInfo
