"""Domain errors as coded errors an agent acts on.

Every error a caller can fix (an unknown id, a patch that does not apply, a bad rule, a task
that does not exist) or wait out (a full queue) gets one code (``error_codes.ErrorCode``) and a
message that says what to do next. A tool answers it as an error result (``coded_errors``, put
around every tool by ``arguments.tool``); a resource or a prompt raises it as a protocol error
(``resource_errors``, ``prompt_errors``); ``CodedServer`` codes the refusals the SDK makes
before any of ours runs. Anything else is a bug: the SDK reports it as a bare "Error executing
tool …" with no code, logs the traceback, and the server keeps serving.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import (
    ResourceNotFoundError,
    ToolError,
    UnexpectedToolError,
)
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    TextContent,
)
from pydantic import AnyUrl, ValidationError

from adaexplore_mcp.judge import JudgeError, JudgeUnavailable, QueueFull
from adaexplore_mcp.judge.profile import ProfileError, ProfileFailed, ProfilerUnavailable
from adaexplore_mcp.mcp_server.error_codes import ErrorCode, ErrorInfo, ErrorPayload
from adaexplore_mcp.mcp_server.listing import CursorError
from adaexplore_mcp.memory import RuleTextError, UnknownRule
from adaexplore_mcp.prompts import PromptNotFound
from adaexplore_mcp.search_engine import (
    BudgetExhausted,
    InvalidStep,
    NoChange,
    PatchError,
    SearchError,
    UnknownNode,
    UnknownSearch,
)
from adaexplore_mcp.tasks import TaskError

log = logging.getLogger(__name__)

ToolFn = TypeVar("ToolFn", bound=Callable[..., Awaitable[Any]])

# The one place an exception gets its code. The first entry the exception is an instance of
# wins, so a subclass comes before its base.
_CODES: tuple[tuple[type[Exception], ErrorCode], ...] = (
    (ValidationError, ErrorCode.INVALID_ARGUMENTS),
    (CursorError, ErrorCode.INVALID_ARGUMENTS),
    (TaskError, ErrorCode.INVALID_TASK),
    (UnknownSearch, ErrorCode.UNKNOWN_SEARCH),
    (UnknownNode, ErrorCode.UNKNOWN_NODE),
    (InvalidStep, ErrorCode.INVALID_STEP),
    (NoChange, ErrorCode.NO_CHANGE),
    (PatchError, ErrorCode.PATCH_NOT_APPLIED),
    (BudgetExhausted, ErrorCode.BUDGET_SPENT),
    (SearchError, ErrorCode.SEARCH_ERROR),
    (QueueFull, ErrorCode.QUEUE_FULL),
    (ProfilerUnavailable, ErrorCode.JUDGE_UNAVAILABLE),
    (ProfileFailed, ErrorCode.JUDGE_FAILED),
    (JudgeUnavailable, ErrorCode.JUDGE_UNAVAILABLE),
    (JudgeError, ErrorCode.JUDGE_FAILED),
    (RuleTextError, ErrorCode.INVALID_RULE),
    (UnknownRule, ErrorCode.UNKNOWN_RULE),
    (PromptNotFound, ErrorCode.UNKNOWN_PROMPT),
)

# resources: these codes mean the URI names nothing; the rest are "internal error"
_NOT_FOUND = {
    ErrorCode.UNKNOWN_RESOURCE,
    ErrorCode.INVALID_ARGUMENTS,
    ErrorCode.INVALID_TASK,
    ErrorCode.UNKNOWN_SEARCH,
    ErrorCode.UNKNOWN_NODE,
    ErrorCode.NO_KERNEL,
}

_RULE_FORMAT = (
    "Nothing was recorded. A rule is one sentence of at most 60 words that starts exactly "
    "'You cannot' and names the Triton or PyTorch construct, never this kernel's variables or "
    "line numbers; a fix may follow after a semicolon. Example: 'You cannot use tl.arange with a "
    "range that is not a power of two; round up with triton.next_power_of_2 and mask.' Or leave "
    "rule out and the memory files the failure by its signature."
)


def error_of(exc: BaseException) -> ErrorInfo | None:
    """The coded error for an exception the caller can fix or wait out; None for a bug."""
    code = next((code for kind, code in _CODES if isinstance(exc, kind)), None)
    return None if code is None else ErrorInfo(code=code, message=_message(code, exc))


def _message(code: ErrorCode, exc: BaseException) -> str:
    if isinstance(exc, ProfileError):  # its own words: what to install, or ncu's output
        return str(exc)
    if code is ErrorCode.QUEUE_FULL:
        return (
            f"the judge's queue is full ({exc}); nothing was evaluated or recorded. Wait a few "
            "seconds and call again."
        )
    if code is ErrorCode.JUDGE_UNAVAILABLE:
        return (
            f"the judge is unavailable: {exc}. Nothing was evaluated or recorded. The server's "
            "operator must make the judge reachable (ADAEXPLORE_JUDGE__DEVICE for the local "
            "pool, or `adaexplore-mcp serve --judge URL` for a judge service); then call again."
        )
    if code is ErrorCode.JUDGE_FAILED:
        return (
            f"the judge could not produce a verdict: {exc}. Nothing was recorded; call again, "
            "and if it repeats, report it to the server's operator."
        )
    if code is ErrorCode.INVALID_RULE:
        return f"the rule was not accepted: {exc}. {_RULE_FORMAT}"
    if isinstance(exc, ValidationError):
        # the field and the bound it breaks, not the value: the caller has that already
        return "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}"
            for err in exc.errors()
        )
    return str(exc)


def error_result(error: ErrorInfo) -> CallToolResult:
    """A tool's answer for ``error``: the code in the structured content and first in the
    text, without the SDK's "Error executing tool" that is reserved for bugs."""
    return CallToolResult(
        content=[TextContent(type="text", text=error.text)],
        structured_content=ErrorPayload(error=error).model_dump(mode="json"),
        is_error=True,
    )


def coded_errors(fn: ToolFn) -> ToolFn:
    """The tool ``fn`` with the errors a caller can act on answered as coded error results;
    a bug still propagates to the SDK."""
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"tool {fn.__name__} must be async: it runs on the server's event loop")

    @functools.wraps(fn)
    async def tool(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except Exception as exc:
            error = error_of(exc)
            if error is None:
                raise
            log.info("tool %s failed: %r", fn.__name__, error.text)  # %r: one line
            return error_result(error)

    # The SDK derives the schemas from this signature. A CallToolResult annotated with the
    # answer's model keeps that model's output schema, and the SDK checks an error result
    # against no schema: the error payload is not the answer's shape.
    signature = inspect.signature(fn, eval_str=True)
    tool.__signature__ = signature.replace(  # type: ignore[attr-defined]
        return_annotation=Annotated[CallToolResult, signature.return_annotation]
    )
    return tool  # type: ignore[return-value]


class CodedServer(MCPServer):
    """An ``MCPServer`` whose own refusals carry a code too: arguments that do not fit a
    tool's input schema (checked before the tool runs, so ``coded_errors`` never sees them),
    and a tool, prompt or resource it does not have."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise  # a bug
        except ToolError as exc:
            # The SDK raises a plain ToolError from the ValidationError of the arguments, and
            # one without a cause for an unknown tool; the tools themselves raise none.
            if isinstance(exc.__cause__, ValidationError):
                error = ErrorInfo(
                    code=ErrorCode.INVALID_ARGUMENTS,
                    message=_message(ErrorCode.INVALID_ARGUMENTS, exc.__cause__),
                )
            elif exc.__cause__ is None and name not in (names := await self._tool_names()):
                error = ErrorInfo(
                    code=ErrorCode.UNKNOWN_TOOL,
                    message=f"no tool named {name!r}; the server has {', '.join(names)}",
                )
            else:
                raise
            log.info("tool %s refused: %r", name, error.text)
            return error_result(error)

    async def _tool_names(self) -> list[str]:
        return sorted(tool.name for tool in await self.list_tools())

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context | None = None
    ) -> GetPromptResult | InputRequiredResult:
        # the SDK answers an unknown name with a bare "Internal server error", as for a bug
        names = sorted(prompt.name for prompt in await self.list_prompts())
        if name not in names:
            raise protocol_error(
                ErrorCode.UNKNOWN_PROMPT,
                f"no prompt named {name!r}; the server has {', '.join(names)}",
            )
        return await super().get_prompt(name, arguments, context)

    async def read_resource(self, uri: AnyUrl | str, context: Context | None = None) -> Any:
        try:
            return await super().read_resource(uri, context)
        except ResourceNotFoundError as exc:
            # the SDK's: no resource or template matches (the resources raise coded errors)
            raise protocol_error(
                ErrorCode.UNKNOWN_RESOURCE,
                f"no resource at {uri}; resources/list and resources/templates/list show what "
                "the server has",
                uri=str(uri),
            ) from exc


def protocol_error(code: ErrorCode, message: str, *, uri: str | None = None) -> MCPError:
    """A resource's or a prompt's refusal as the protocol error it is sent as: the error in
    ``data`` (beside the resource's ``uri``) and its text as the message. A prompt's is
    "invalid params" (-32602); so is a resource's whose URI names nothing, as the SDK reports
    it, and any other of a resource's is "internal error" (-32603)."""
    error = ErrorInfo(code=code, message=message)
    data = ErrorPayload(error=error).model_dump(mode="json")
    if uri is None:
        return MCPError(code=INVALID_PARAMS, message=error.text, data=data)
    protocol = INVALID_PARAMS if code in _NOT_FOUND else INTERNAL_ERROR
    return MCPError(code=protocol, message=error.text, data={"uri": uri} | data)


@contextmanager
def resource_errors(uri: str) -> Iterator[None]:
    """Inside the resource ``uri``: errors the caller can act on become coded protocol
    errors (``protocol_error``)."""
    try:
        yield
    except MCPError:
        raise
    except Exception as exc:
        error = error_of(exc)
        if error is None:
            raise
        raise protocol_error(error.code, error.message, uri=uri) from exc


@contextmanager
def prompt_errors() -> Iterator[None]:
    """Inside a prompt: the SDK hides a prompt's own exceptions, so errors the caller can act
    on become coded protocol errors (``protocol_error``)."""
    try:
        yield
    except MCPError:
        raise
    except Exception as exc:
        error = error_of(exc)
        if error is None:
            raise
        raise protocol_error(error.code, error.message) from exc
