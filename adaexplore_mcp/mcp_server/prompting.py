"""The variables of the step prompts, gathered from a search, and the prompts rendered from them.

The MCP prompts ``small_step``, ``large_step`` and ``extract_rule`` and the built-in driver
render the same templates (``adaexplore_mcp/prompts/*.txt``) with the variables built here;
``docs/mcp.md`` lists them. Building them reads the search but selects nothing: no lease, no
virtual loss, no budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from adaexplore_mcp.judge import EvalResult
from adaexplore_mcp.judge.policy import Ops
from adaexplore_mcp.mcp_server.selection import PoolKernel
from adaexplore_mcp.memory import FailureExample, MemoryContext
from adaexplore_mcp.memory.context import gpu_arch_of
from adaexplore_mcp.prompts import render
from adaexplore_mcp.search_engine import (
    Action,
    InvalidStep,
    MemoryEntry,
    PoolEntry,
)
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.tasks import Task

if TYPE_CHECKING:  # built by domain.py on the first tool call, after `initialize`
    from adaexplore_mcp.memory import SkillMemory
    from adaexplore_mcp.search_engine import SearchEngine

AnswerWith = Literal["tool", "text"]


def _common(
    task: Task,
    search_id: str,
    node_id: int,
    rules: list[str],
    answer_with: AnswerWith,
    ops: Ops,
) -> dict[str, Any]:
    return {
        "task_name": task.name,
        "task_description": task.description or task.summary,
        "task_source": task.source,
        "search_id": search_id,
        "node_id": node_id,
        "rules": rules,
        "answer_with": answer_with,
        # the search's operator policy: the prompt says what may stay in torch under it
        "ops": ops.value,
    }


def small_step_variables(
    task: Task,
    search_id: str,
    node_id: int,
    kernel: str,
    working_memory: list[MemoryEntry],
    rules: list[str],
    answer_with: AnswerWith = "tool",
    *,
    ops: Ops,
) -> dict[str, Any]:
    """``small_step.txt``'s variables: the common ones plus ``kernel`` and ``working_memory``."""
    return _common(task, search_id, node_id, rules, answer_with, ops) | {
        "kernel": kernel,
        "working_memory": working_memory,
    }


def large_step_variables(
    task: Task,
    search_id: str,
    node_id: int,
    pool: Sequence[PoolEntry | PoolKernel],
    rules: list[str],
    answer_with: AnswerWith = "tool",
    *,
    ops: Ops,
) -> dict[str, Any]:
    """``large_step.txt``'s variables: the common ones plus ``pool``."""
    return _common(task, search_id, node_id, rules, answer_with, ops) | {"pool": pool}


def search_context(settings: SearchSettings, judged: EvalResult | None) -> MemoryContext:
    """Where the rules and lessons for a step of a search apply: its policies and the GPU that
    judged the kernel (none before a kernel was judged)."""
    env = judged.environment if judged is not None else None
    return MemoryContext(
        precision=settings.precision,
        ops=settings.ops,
        gpu_arch=gpu_arch_of(env.capability, interpreter=env.interpreter) if env else None,
    )


class StepPrompts:
    """Renders the step prompts for a node of a search, with the memory's rules for it."""

    def __init__(self, engine: SearchEngine, memory: SkillMemory) -> None:
        self._engine = engine
        self._memory = memory

    def small_step(self, search_id: str, node_id: int, answer_with: AnswerWith = "tool") -> str:
        engine = self._engine
        task = engine.task(search_id)
        node = engine.get_node(search_id, node_id)
        if node.code is None:
            raise InvalidStep(
                f"node {node_id} is the root of search {search_id!r} and holds no kernel to "
                "revise; use the large_step prompt for it"
            )
        memory, _ = engine.step_context(search_id, node_id, Action.SMALL)
        context = search_context(engine.get_search(search_id).settings, node.result)
        rules = self._memory.get_rules(query=node.code, task=task.name, context=context)
        return render(
            "small_step",
            **small_step_variables(
                task,
                search_id,
                node_id,
                node.code,
                memory,
                [hit.text for hit in rules.rules],
                answer_with,
                ops=engine.get_search(search_id).settings.ops,
            ),
        )

    def large_step(self, search_id: str, node_id: int, answer_with: AnswerWith = "tool") -> str:
        engine = self._engine
        task = engine.task(search_id)
        _, pool = engine.step_context(search_id, node_id, Action.LARGE)
        query = pool[0].code if pool else None
        context = search_context(engine.get_search(search_id).settings, None)
        rules = self._memory.get_rules(query=query, task=task.name, context=context)
        return render(
            "large_step",
            **large_step_variables(
                task,
                search_id,
                node_id,
                pool,
                [hit.text for hit in rules.rules],
                answer_with,
                ops=engine.get_search(search_id).settings.ops,
            ),
        )


def extract_rule_prompt(task: str, code: str, error: str, error_type: str | None = None) -> str:
    """The prompt the memory's distiller sends a model, for one failure."""
    example = FailureExample(
        task=task, error_type=error_type or "Error", error=error, code=code, environment=None
    )
    return render("extract_rule", failures=[example])
