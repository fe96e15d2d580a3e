"""The MCP tools as the driver calls them: typed arguments in, the server's pydantic models out.

The driver reaches the search, the judge and the memory only through an MCP client (in-process
here, so the autonomous loop runs exactly the code an external agent calls). A tool error
carries a code (docs/mcp.md, "Error codes"); the few kinds the driver acts on are told apart by
that code alone, so rewording a message changes nothing here.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from mcp import Client
from mcp.types import CallToolResult
from pydantic import BaseModel, ValidationError

from adaexplore_mcp.mcp_server import (
    ErrorCode,
    ErrorInfo,
    ErrorPayload,
    NodeSelection,
    Released,
    Step,
    TaskDetail,
)
from adaexplore_mcp.memory import AddFailureResult, RulesAnswer
from adaexplore_mcp.search_engine import BestKernel, Edit, NodeView, SearchInfo

M = TypeVar("M", bound=BaseModel)


class ToolFailed(Exception):
    """A tool answered with an error; the message is the server's, for the model or the user.
    ``code`` is None for an error without one: a bug in the server."""

    def __init__(self, tool: str, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.tool = tool
        self.message = message
        self.code = code


class PatchRefused(ToolFailed):
    """apply_patch created nothing: an old_str was not found or not unique, or nothing changed."""


class JudgeDown(ToolFailed):
    """The judge is unreachable or could not produce a verdict: nothing was recorded."""


class JudgeBusy(ToolFailed):
    """The judge's queue is full: nothing was recorded; the step may be sent again."""


class BudgetSpent(ToolFailed):
    """The search's own step budget is spent."""


_KINDS: dict[ErrorCode, type[ToolFailed]] = {
    ErrorCode.QUEUE_FULL: JudgeBusy,
    ErrorCode.JUDGE_UNAVAILABLE: JudgeDown,
    ErrorCode.JUDGE_FAILED: JudgeDown,
    ErrorCode.PATCH_NOT_APPLIED: PatchRefused,
    ErrorCode.NO_CHANGE: PatchRefused,
    ErrorCode.BUDGET_SPENT: BudgetSpent,
}


def _classify(tool: str, result: CallToolResult) -> ToolFailed:
    """The failure an error result stands for, told by its code: from the structured content,
    else from the text (a client in between may have kept only the text)."""
    text = "".join(getattr(block, "text", "") for block in result.content)
    error = _payload(result.structured_content) or ErrorInfo.from_text(text)
    if error is None:  # no code (a bug in the server), or one this driver does not know
        return ToolFailed(tool, text)
    return _KINDS.get(error.code, ToolFailed)(tool, error.message, error.code)


def _payload(structured: dict[str, Any] | None) -> ErrorInfo | None:
    try:
        return ErrorPayload.model_validate(structured).error
    except ValidationError:
        return None


class DriverTreeRow(BaseModel):
    """The part of a ``get_tree`` row the strategies read."""

    id: int
    parent_id: int | None
    action: str
    status: str | None
    speedup: float | None


class DriverTreeListing(BaseModel):
    """The part of ``get_tree``'s answer the driver reads (the server sends more)."""

    search_id: str
    steps: int
    in_flight: int
    next_cursor: str | None = None
    nodes: list[DriverTreeRow]


class Tools:
    """One connected MCP client; every method is one tool call."""

    def __init__(self, client: Client, *, queue_full_retries: int = 5) -> None:
        self._client = client
        self._queue_full_retries = queue_full_retries

    async def call(self, tool: str, model: type[M], **arguments: Any) -> M:
        arguments = {key: value for key, value in arguments.items() if value is not None}
        for attempt in range(self._queue_full_retries + 1):
            result = await self._client.call_tool(tool, arguments)
            if not result.is_error:
                return model.model_validate(result.structured_content)
            failure = _classify(tool, result)
            if not isinstance(failure, JudgeBusy) or attempt == self._queue_full_retries:
                raise failure
            await asyncio.sleep(min(2.0 * 2**attempt, 30.0))  # the message says: wait and retry
        raise AssertionError("unreachable")

    async def get_task(self, task: str) -> TaskDetail:
        return await self.call("get_task", TaskDetail, task=task)

    async def start_search(self, task: str, **options: Any) -> SearchInfo:
        return await self.call("start_search", SearchInfo, task=task, **options)

    async def select_node(
        self, search_id: str, author: str, *, context_tokens: int | None = None
    ) -> NodeSelection:
        return await self.call(
            "select_node",
            NodeSelection,
            search_id=search_id,
            author=author,
            context_tokens=context_tokens,
        )

    async def apply_patch(
        self,
        search_id: str,
        node_id: int,
        edits: list[Edit],
        *,
        tokens: int,
        author: str,
        note: str | None = None,
    ) -> Step:
        patches = [edit.model_dump() for edit in edits]
        return await self.call(
            "apply_patch",
            Step,
            search_id=search_id,
            node_id=node_id,
            patches=patches,
            tokens=tokens,
            author=author,
            note=_bounded(note),
        )

    async def regenerate(
        self,
        search_id: str,
        code: str,
        node_id: int,
        *,
        tokens: int,
        author: str,
        note: str | None = None,
    ) -> Step:
        return await self.call(
            "regenerate",
            Step,
            search_id=search_id,
            code=code,
            node_id=node_id,
            tokens=tokens,
            author=author,
            note=_bounded(note),
        )

    async def release(self, search_id: str, node_id: int) -> bool:
        answer = await self.call("release", Released, search_id=search_id, node_id=node_id)
        return answer.released

    async def get_tree(self, search_id: str, *, page: int = 1000) -> DriverTreeListing:
        """Every node: the tool answers in pages, the strategies need the whole tree."""
        listing = await self.call("get_tree", DriverTreeListing, search_id=search_id, limit=page)
        while listing.next_cursor is not None:
            rest = await self.call(
                "get_tree",
                DriverTreeListing,
                search_id=search_id,
                cursor=listing.next_cursor,
                limit=page,
            )
            listing = rest.model_copy(update={"nodes": listing.nodes + rest.nodes})
        return listing

    async def get_node(self, search_id: str, node_id: int) -> NodeView:
        return await self.call("get_node", NodeView, search_id=search_id, node_id=node_id)

    async def best_kernel(self, search_id: str) -> BestKernel:
        # no re-measurement: the run's best on its recorded measurements (reeval re-measures)
        return await self.call("best_kernel", BestKernel, search_id=search_id, remeasure=False)

    async def get_rules(self, query: str | None, task: str) -> RulesAnswer:
        return await self.call("get_rules", RulesAnswer, query=query, task=task)

    async def add_failure(
        self, task: str, code: str, error: str, error_type: str | None
    ) -> AddFailureResult:
        return await self.call(
            "add_failure",
            AddFailureResult,
            task=task,
            code=code,
            error=error[:200_000],
            error_type=error_type,
        )


_NOTE_CHARS = 4000  # the tools' bound on a note


def _bounded(note: str | None) -> str | None:
    """A note the tools accept: a model's long plan is cut rather than refused with the step."""
    if note is None or not note.strip():
        return None
    note = note.strip()
    return note if len(note) <= _NOTE_CHARS else note[: _NOTE_CHARS - 1] + "…"
