"""``Searches``: the search tools' work over the search engine, the rule memory and the
evaluations in flight. It knows nothing of MCP; search_tools.py translates."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Unpack

from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge import EvalResult, ProgressCallback
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.judge.result import kernel_hash
from adaexplore_mcp.mcp_server.answers import Step, after_step
from adaexplore_mcp.mcp_server.listing import (
    SearchList,
    SearchRow,
    TreeListing,
    decode_cursor,
    encode_cursor,
)
from adaexplore_mcp.mcp_server.models import Evaluation, Released
from adaexplore_mcp.mcp_server.prompting import search_context
from adaexplore_mcp.mcp_server.running import RunningSteps
from adaexplore_mcp.mcp_server.selection import NodeSelection, build_selection
from adaexplore_mcp.memory import AddFailureResult, Measured, RuleHit
from adaexplore_mcp.memory.context import MemoryContext
from adaexplore_mcp.search_engine import (
    BestKernel,
    Budget,
    Edit,
    NodeView,
    SearchInfo,
    TreeView,
)
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.search_engine.steps import StepAuthorship, StepRequest
from adaexplore_mcp.tasks import Task

if TYPE_CHECKING:  # built by domain.py on the first tool call, after `initialize`
    from adaexplore_mcp.memory import PerformanceMemory, SkillMemory
    from adaexplore_mcp.search_engine import SearchEngine

log = logging.getLogger(__name__)

Remember = Callable[[str, str, EvalResult], Awaitable[AddFailureResult | None]]
# How much of each side of an edit a performance lesson quotes.
_EDIT_CHARS = 90


class Searches:
    """Every method is one search tool's work; domain errors propagate for the caller to
    translate. ``task`` resolves a task reference, ``task_name`` a filter's, ``remember`` files a
    failure in the memory."""

    def __init__(
        self,
        settings: Settings,
        engine: SearchEngine,
        memory: SkillMemory,
        running: RunningSteps[Step | Evaluation],
        *,
        lessons: PerformanceMemory,
        task: Callable[[str], Task],
        task_name: Callable[[str | None], str | None],
        remember: Remember,
    ) -> None:
        self.engine = engine
        self._settings = settings
        self._memory = memory
        self._lessons = lessons
        self._running = running
        self._task = task
        self._task_name = task_name
        self._remember = remember

    def start_search(
        self,
        ref: str,
        *,
        max_steps: int | None = None,
        max_wall_s: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        label: str | None = None,
        author: str | None = None,
        precision: Precision | None = None,
        ops: Ops | None = None,
    ) -> SearchInfo:
        defaults = self._settings.search
        budget = Budget(
            max_steps=max_steps or defaults.max_steps,
            max_wall_s=max_wall_s or defaults.max_wall_s,
            max_tokens=max_tokens or defaults.max_tokens,
        )
        updates: dict[str, object] = {
            "precision": precision or defaults.precision,
            "ops": ops or defaults.ops,
        }
        if seed is not None:
            updates["seed"] = seed
        settings = defaults.model_copy(update=updates)
        return self.engine.start_search(
            self._task(ref), budget=budget, settings=settings, label=label, author=author
        )

    def list_searches(
        self, task: str | None = None, limit: int = 20, cursor: str | None = None
    ) -> SearchList:
        offset = decode_cursor("searches", cursor)
        found = self.engine.list_searches(
            task=self._task_name(task), limit=limit + 1, offset=offset
        )
        more = len(found) > limit
        return SearchList(
            searches=[SearchRow.of(info) for info in found[:limit]],
            next_cursor=encode_cursor("searches", offset + limit) if more else None,
        )

    def select_node(
        self,
        search_id: str,
        *,
        author: str | None = None,
        holder: str | None = None,
        context_tokens: int | None = None,
    ) -> NodeSelection:
        selection = self.engine.select_node(search_id, author=author, holder=holder)
        node = selection.node
        # the rules most relevant to what the step will build on: the node's kernel, else the
        # best kernel of the pool, else the task's reference
        task = self.engine.task(search_id)
        query = node.code or (selection.pool[0].code if selection.pool else task.source)
        context = self.memory_context(search_id, node.result)
        return build_selection(
            selection,
            self._relevant_rules(query, task.name, context),
            self.engine.leases(search_id, holder=holder),
            context_tokens or self._settings.mcp.context_tokens,
            lessons=self._lessons.similar(task.source, context),
        )

    def memory_context(self, search_id: str, judged: EvalResult | None) -> MemoryContext:
        """What the memory's entries must not contradict: the search's policies and the GPU
        ``judged`` (the selected node's result) ran on, when it ran on one."""
        return search_context(self.engine.get_search(search_id).settings, judged)

    def _relevant_rules(self, query: str, task: str, context: MemoryContext) -> list[RuleHit]:
        """The rules worth a selection's room: at most ``max_rules``, each at least
        ``rule_relevance`` as relevant as the most relevant one, none its context denies."""
        settings = self._settings.mcp
        if settings.max_rules == 0:
            return []
        hits = self._memory.get_rules(
            query=query, task=task, limit=settings.max_rules, context=context
        ).rules
        top = max((hit.score for hit in hits), default=0.0)
        return [hit for hit in hits if hit.score > 0 and hit.score >= settings.rule_relevance * top]

    async def apply_patch(
        self,
        search_id: str,
        node_id: int,
        patches: Sequence[Edit],
        *,
        holder: str | None = None,
        on_progress: ProgressCallback | None = None,
        **authorship: Unpack[StepAuthorship],
    ) -> Step:
        step = self.engine.patch_step(search_id, node_id, list(patches), **authorship)
        return await self._take(search_id, step, holder, on_progress)

    async def regenerate(
        self,
        search_id: str,
        code: str,
        node_id: int | None = None,
        *,
        holder: str | None = None,
        on_progress: ProgressCallback | None = None,
        **authorship: Unpack[StepAuthorship],
    ) -> Step:
        step = self.engine.regenerate_step(search_id, code, node_id, **authorship)
        return await self._take(search_id, step, holder, on_progress)

    async def _take(
        self,
        search_id: str,
        step: StepRequest,
        holder: str | None,
        on_progress: ProgressCallback | None,
    ) -> Step:
        """Evaluates and records a step in a task of its own (``RunningSteps``): the request
        may go, the step is recorded all the same, and the same step sent again joins it."""

        async def work(progress: ProgressCallback) -> Step:
            taken = await self.engine.take(search_id, step, progress, holder=holder)
            node, memory = taken.node, None
            if not taken.reused and node.result is not None and node.code is not None:
                memory = await self._remember(node.result.task, node.code, node.result)
                self._learn(search_id, node)
            return Step.of(taken, memory)

        key = ("step", search_id, step.parent, kernel_hash(step.code))
        if key in self._running and step.tokens:  # joining: its tokens were spent all the same
            self.engine.add_tokens(search_id, step.tokens)
        return await self._running.run(key, work, on_progress)  # type: ignore[return-value]

    def _learn(self, search_id: str, node: NodeView) -> None:
        """Keeps a step that made its parent's kernel measurably faster as a performance lesson.
        The step matters more than its bookkeeping: a lesson that cannot be kept is logged."""
        result = node.result
        if node.parent_id is None or result is None or not (result.ok and result.timing_meaningful):
            return
        try:
            parent = self.engine.get_node(search_id, node.parent_id)
            settings = self.engine.get_search(search_id).settings
            before, after = _measured(parent, settings), _measured(node, settings)
            if before is None or after is None:
                return
            task = self.engine.task(search_id)
            self._lessons.observe(
                search_id=search_id,
                node_id=node.id,
                parent_id=parent.id,
                task=task.name,
                task_source=task.source,
                change=node.note or _edits_summary(node.edits),
                before=before,
                after=after,
            )
        except Exception:
            log.exception("could not keep node %s of search %s as a lesson", node.id, search_id)

    def release(self, search_id: str, node_id: int, *, holder: str | None = None) -> Released:
        released = self.engine.release(search_id, node_id, holder=holder)
        info = self.engine.get_search(search_id)
        return Released(
            search_id=search_id,
            node_id=node_id,
            released=released,
            next_call=after_step(search_id, info.exhausted),
        )

    def release_holder(self, holder: str) -> int:
        """A client went away: its selections go back to the searches."""
        return self.engine.release_holder(holder)

    def fork(
        self,
        search_id: str,
        node_id: int,
        *,
        max_steps: int | None = None,
        label: str | None = None,
    ) -> SearchInfo:
        budget = Budget(max_steps=max_steps) if max_steps is not None else None
        return self.engine.fork(search_id, node_id, budget=budget, label=label)

    def get_tree(self, search_id: str) -> TreeView:
        return self.engine.get_tree(search_id)

    def tree_listing(
        self,
        search_id: str,
        *,
        holder: str | None = None,
        limit: int = 200,
        cursor: str | None = None,
    ) -> TreeListing:
        offset = decode_cursor("tree", cursor)
        leases = self.engine.leases(search_id, holder=holder)
        return TreeListing.of(self.get_tree(search_id), leases, offset=offset, limit=limit)

    def get_node(self, search_id: str, node_id: int) -> NodeView:
        return self.engine.get_node(search_id, node_id)

    def remeasurements(self, search_id: str) -> int:
        """Evaluations ``best_kernel(remeasure=True)`` will run: its candidates times the
        re-measurements of each, under the search's own settings."""
        info = self.engine.get_search(search_id)
        settings = info.settings
        return min(info.correct_count, settings.remeasure_top_k) * settings.remeasure_count

    async def best_kernel(
        self,
        search_id: str,
        *,
        remeasure: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> BestKernel:
        return await self.engine.best_kernel(
            search_id, remeasure=remeasure, on_progress=on_progress
        )


def _measured(node: NodeView, settings: SearchSettings) -> Measured | None:
    """A correct node's timed speedup and where it was measured; None when it has none (a
    failure, the root, or a timing that is not meaningful, as on the CPU)."""
    result = node.result
    if result is None or not result.ok or not result.timing_meaningful or not node.speedup:
        return None
    env = result.environment
    return Measured(
        speedup=node.speedup,
        device_name=env.device_name if env else None,
        context=search_context(settings, result),
    )


def _edits_summary(edits: Sequence[Edit] | None) -> str:
    """A patch in a line: each edit's old and new text, cut."""

    def cut(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= _EDIT_CHARS else text[: _EDIT_CHARS - 1] + "…"

    return "; ".join(f"replaced `{cut(e.old_str)}` with `{cut(e.new_str)}`" for e in edits or [])
