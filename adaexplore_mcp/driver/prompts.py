"""What the driver sends its model: the MCP server's prompt templates, rendered with the context
the tools returned, and a system prompt per role.

The step prompts are the very templates the MCP prompts ``small_step`` and ``large_step``
render (with ``answer_with="text"``, the format for a bare model); the driver adds only what an
MCP client cannot ask the server for: the lessons of the reasoning bank, the reviser/tuner
split of a small step, and ``refine.txt`` for the refine and metr baselines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from adaexplore_mcp.judge import EvalResult, speed_of_light_line
from adaexplore_mcp.judge.policy import Ops
from adaexplore_mcp.llm import Message
from adaexplore_mcp.mcp_server import (
    PoolKernel,
    SelectedNode,
    large_step_variables,
    small_step_variables,
)
from adaexplore_mcp.prompts import render
from adaexplore_mcp.search_engine import MemoryEntry, NodeView, PoolEntry
from adaexplore_mcp.tasks import Task

Role = Literal["writer", "reviser", "tuner"]
Purpose = Literal["writer", "reviser", "tuner", "repair", "other"]

SYSTEM: dict[Role, str] = {
    "writer": (
        "You are an expert GPU kernel engineer. You write correct, fast Triton kernels for "
        "PyTorch tasks and follow the requested answer format exactly."
    ),
    "reviser": (
        "You are an expert GPU kernel engineer reviewing a Triton kernel. You propose concrete "
        "improvements in prose and write no code."
    ),
    "tuner": (
        "You are an expert GPU kernel engineer. You edit Triton kernels with exact text "
        "replacements and follow the requested answer format exactly."
    ),
}

_FEEDBACK_CHARS = 2000


def purpose_of(system: str | None, messages: Sequence[Message]) -> Purpose:
    """Which call of a step a request is (a replayed transcript answers by it): a tuner
    conversation that goes on after the model's answer is the repair round."""
    for role, text in SYSTEM.items():
        if system == text:
            if role == "tuner" and len(messages) > 1:
                return "repair"
            return role
    return "other"


def large(
    task: Task,
    search_id: str,
    node_id: int,
    pool: Sequence[PoolEntry | PoolKernel],
    rules: list[str],
    lessons: list[str],
    *,
    ops: Ops,
) -> str:
    """A large step (AdaExplore), or a fresh kernel from the root (the baselines): the
    ``large_step`` template; with an empty pool it asks for a first correct kernel. ``ops`` is
    the search's operator policy."""
    variables = large_step_variables(task, search_id, node_id, pool, rules, "text", ops=ops)
    return render("large_step", **variables, lessons=lessons)


def revise(
    task: Task,
    search_id: str,
    node: NodeView | SelectedNode,
    memory: list[MemoryEntry],
    rules: list[str],
    lessons: list[str],
    *,
    ops: Ops,
) -> str:
    """The reviser's prompt: the ``small_step`` template asking for 1–3 improvements only."""
    variables = small_step_variables(
        task, search_id, node.id, node.code or "", memory, rules, "text", ops=ops
    )
    return render("small_step", **variables, lessons=lessons, revise_only=True)


def tune(
    task: Task,
    search_id: str,
    node: NodeView | SelectedNode,
    memory: list[MemoryEntry],
    rules: list[str],
    lessons: list[str],
    improvements: str,
    *,
    ops: Ops,
) -> str:
    """The tuner's prompt: the ``small_step`` template with the reviser's improvements, asking
    for old_str/new_str edits in the text format."""
    variables = small_step_variables(
        task, search_id, node.id, node.code or "", memory, rules, "text", ops=ops
    )
    return render("small_step", **variables, lessons=lessons, improvements=improvements)


def repair(error: str) -> str:
    """The follow-up that shows the tuner why its edits did not apply."""
    return (
        f"Your edits were not applied, and nothing was evaluated:\n\n{error}\n\n"
        "The current kernel is unchanged. Answer again in the same format with corrected "
        "edits: copy every old_str exactly from the current kernel, with enough surrounding "
        "lines that it occurs exactly once."
    )


def refine(
    task: Task,
    search_id: str,
    node: NodeView,
    rules: list[str],
    lessons: list[str],
    *,
    ops: Ops,
) -> str:
    """``refine.txt``: a whole new version of one kernel, given the judge's feedback on it."""
    result = node.result
    return render(
        "refine",
        task_name=task.name,
        task_description=task.description or task.summary,
        task_source=task.source,
        search_id=search_id,
        node_id=node.id,
        kernel=node.code or "",
        status=result.status.value if result else "not evaluated",
        speedup=node.speedup,
        feedback=feedback(result, node.speedup) if result else "(no verdict)",
        rules=rules,
        lessons=lessons,
        answer_with="text",
        ops=ops.value,
    )


def feedback(result: EvalResult, speedup: float | None) -> str:
    """The verdict in a few lines: what a model needs to act on it."""
    if result.status.value == "correct":
        head = (
            f"correct, {speedup:.3g}x the baseline"
            if speedup is not None
            else "correct (timing not meaningful here: the CPU interpreter)"
        )
        limits = speed_of_light_line(result, launches=True)
        if limits:
            head += f"\n{limits}"
    else:
        head = result.status.value.replace("_", " ")
    parts = [head, result.message]
    if result.error is not None:
        where = f" at {result.error.location}" if result.error.location else ""
        parts.append(f"{result.error.type}{where}: {result.error.message}")
    parts += [f"integrity check {flag.check}: {flag.detail}" for flag in result.integrity]
    text = "\n".join(part for part in parts if part)
    return text if len(text) <= _FEEDBACK_CHARS else text[: _FEEDBACK_CHARS - 3] + "..."
