"""MCP prompts: the templates the built-in driver sends its model, filled in from a search."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts import Prompt
from pydantic import Field

from adaexplore_mcp.mcp_server.arguments import describe
from adaexplore_mcp.mcp_server.error_codes import ErrorCode
from adaexplore_mcp.mcp_server.errors import prompt_errors, protocol_error
from adaexplore_mcp.mcp_server.prompting import AnswerWith as AnswerMode
from adaexplore_mcp.mcp_server.prompting import extract_rule_prompt
from adaexplore_mcp.mcp_server.workbench import Workbench

PromptSearchId = Annotated[str, Field(description="The search's id.")]
PromptNodeId = Annotated[
    str, Field(description="The node's number (select_node's node.id); 0 is the root.")
]
# plain strings checked here: the SDK would hide a validation error behind "Error rendering"
AnswerWith = Annotated[
    str,
    Field(
        description="tool: end by calling apply_patch/regenerate (for an agent with tools); "
        "text: answer in a fixed text format (for a bare model)."
    ),
]


def _node(node_id: str) -> int:
    if not node_id.strip().isdigit():
        raise protocol_error(
            ErrorCode.INVALID_ARGUMENTS,
            f"node_id must be a node's number (0 is the root), not {node_id!r}",
        )
    return int(node_id)


def _mode(answer_with: str) -> AnswerMode:
    if answer_with not in ("tool", "text"):
        raise protocol_error(
            ErrorCode.INVALID_ARGUMENTS, f"answer_with is 'tool' or 'text', not {answer_with!r}"
        )
    return answer_with  # type: ignore[return-value]


class _Prompt(Prompt):
    """A prompt whose missing arguments are reported as such: the SDK's own check raises an
    error its handler turns into a bare 'Internal server error'."""

    async def render(self, arguments: dict[str, Any] | None, context: Any) -> Any:
        required = {arg.name for arg in self.arguments or [] if arg.required}
        missing = sorted(required - set(arguments or {}))
        if missing:
            raise protocol_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"prompt {self.name} needs the arguments {', '.join(missing)} "
                f"(it takes {', '.join(arg.name for arg in self.arguments or [])})",
            )
        return await super().render(arguments, context)


def register_prompts(server: MCPServer, bench: Workbench) -> None:
    def prompt(title: str):
        def add(fn):
            server.add_prompt(_Prompt.from_function(fn, title=title, description=describe(fn)))
            return fn

        return add

    @prompt(title="Small step (revise a kernel)")
    async def small_step(
        search_id: PromptSearchId, node_id: PromptNodeId, answer_with: AnswerWith = "tool"
    ) -> str:
        """Revise a node's kernel: the task's reference, the kernel, the working memory (the
        chain it grew from with the judge's feedback) and the active rules, asking for 1 to 3
        concrete improvements as exact old_str/new_str edits. Reads the search; reserves
        nothing."""
        with prompt_errors():
            return bench.prompts.small_step(search_id, _node(node_id), _mode(answer_with))

    @prompt(title="Large step (write a new kernel)")
    async def large_step(
        search_id: PromptSearchId, node_id: PromptNodeId = "0", answer_with: AnswerWith = "tool"
    ) -> str:
        """Write a new kernel: the task's reference, the pool of the best correct kernels
        (chosen to differ) and the active rules, asking for a whole kernel that differs in
        structure from the pool. Reads the search; reserves nothing."""
        with prompt_errors():
            return bench.prompts.large_step(search_id, _node(node_id), _mode(answer_with))

    @prompt(title="Extract a rule from a failure")
    async def extract_rule(
        task: Annotated[str, Field(description="The task's name.")],
        code: Annotated[str, Field(description="The kernel that failed.")],
        error: Annotated[str, Field(description="The error it failed with.")],
        error_type: Annotated[str, Field(description="The exception type, if known.")] = "",
    ) -> str:
        """Distil one failure into a "You cannot ..." rule (the prompt the memory's distiller
        sends its model). Give the answer to add_failure as its rule."""
        with prompt_errors():
            return extract_rule_prompt(task, code, error, error_type or None)
