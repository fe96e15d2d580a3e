"""Domain errors as the text an agent acts on.

Every error a caller can fix (an unknown id, a patch that does not apply, a bad rule, a task
that does not exist) or wait out (a full queue) becomes a tool error whose message says what to
do next. Anything else is a bug: the SDK reports it as a bare "Error executing tool …" and logs
the traceback, and the server keeps serving.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from pydantic import ValidationError

from adaexplore_mcp.judge import JudgeError, JudgeUnavailable, QueueFull
from adaexplore_mcp.memory import RuleTextError, UnknownRule
from adaexplore_mcp.prompts import PromptNotFound
from adaexplore_mcp.search_engine import SearchError, UnknownNode, UnknownSearch
from adaexplore_mcp.tasks import TaskError

_RULE_FORMAT = (
    "Nothing was recorded. A rule is one sentence of at most 60 words that starts exactly "
    "'You cannot' and names the Triton or PyTorch construct, never this kernel's variables or "
    "line numbers; a fix may follow after a semicolon. Example: 'You cannot use tl.arange with a "
    "range that is not a power of two; round up with triton.next_power_of_2 and mask.' Or leave "
    "rule out and the memory files the failure by its signature."
)


def explain(exc: BaseException) -> str | None:
    """The actionable message for an error the caller can fix or wait out; None for a bug."""
    if isinstance(exc, QueueFull):
        return (
            f"the judge's queue is full ({exc}); nothing was evaluated or recorded. Wait a few "
            "seconds and call again."
        )
    if isinstance(exc, JudgeUnavailable):
        return (
            f"the judge is unavailable: {exc}. Nothing was evaluated or recorded. The server's "
            "operator must make the judge reachable (ADAEXPLORE_JUDGE__DEVICE for the local "
            "pool, or `adaexplore-mcp serve --judge URL` for a judge service); then call again."
        )
    if isinstance(exc, JudgeError):
        return (
            f"the judge could not produce a verdict: {exc}. Nothing was recorded; call again, "
            "and if it repeats, report it to the server's operator."
        )
    if isinstance(exc, RuleTextError):
        return f"the rule was not accepted: {exc}. {_RULE_FORMAT}"
    if isinstance(exc, SearchError | TaskError | UnknownRule | PromptNotFound):
        return str(exc)
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}"
            for err in exc.errors()
        )
        return f"invalid arguments: {problems}"
    return None


def _not_found(exc: BaseException) -> bool:
    return isinstance(exc, UnknownSearch | UnknownNode | TaskError)


@contextmanager
def tool_errors() -> Iterator[None]:
    """Inside a tool: errors the caller can act on become ``ToolError`` with their message."""
    try:
        yield
    except ToolError:
        raise
    except Exception as exc:
        message = explain(exc)
        if message is None:
            raise
        raise ToolError(message) from exc


@contextmanager
def resource_errors() -> Iterator[None]:
    """Inside a resource: unknown ids are 'not found' (-32602), other known errors -32603."""
    try:
        yield
    except ResourceError:
        raise
    except Exception as exc:
        message = explain(exc)
        if message is None:
            raise
        if _not_found(exc):
            raise ResourceNotFoundError(message) from exc
        raise ResourceError(message) from exc


@contextmanager
def prompt_errors() -> Iterator[None]:
    """Inside a prompt: the SDK hides a prompt's own exceptions, so known errors become the
    protocol error 'invalid params' with the actionable message."""
    try:
        yield
    except MCPError:
        raise
    except Exception as exc:
        message = explain(exc)
        if message is None:
            raise
        raise MCPError(code=INVALID_PARAMS, message=message) from exc
