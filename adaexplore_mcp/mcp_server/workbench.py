"""``Workbench``: the one object the MCP tools act on.

It owns the judge (started on the first evaluation), the skill memory and the search engine,
all over one ``ADAEXPLORE_HOME``, and adds the little the tools need on top of them: task lookup
by name or path, the active rules next to a selection, and failures recorded in the memory as
the judge reports them. It knows nothing of MCP; ``server.py`` translates.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Sequence
from pathlib import Path

import adaexplore_mcp
from adaexplore_mcp.config import Precision, Settings
from adaexplore_mcp.judge import Environment, EvalResult, Judge, ProgressCallback, open_judge
from adaexplore_mcp.mcp_server.lazy_judge import LazyJudge
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
from adaexplore_mcp.mcp_server.prompting import StepPrompts
from adaexplore_mcp.memory import (
    AddFailureResult,
    FailureReport,
    RulesAnswer,
    SkillMemory,
    open_memory,
)
from adaexplore_mcp.search_engine import (
    Action,
    BestKernel,
    Budget,
    Edit,
    NodeView,
    SearchEngine,
    SearchInfo,
    StepResult,
    TreeView,
)
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import (
    Task,
    TaskError,
    bundled_tasks,
    resolve_task,
    solution_names,
)

log = logging.getLogger(__name__)

# FailureReport's own bound on the error text.
_ERROR_CHARS = 200_000


class Workbench:
    """Tasks, the judge, the memory and the searches of one ``Settings``. Every method is one
    tool's work; domain errors propagate for the caller to translate."""

    def __init__(
        self,
        settings: Settings,
        *,
        judge: Judge | None = None,
        memory: SkillMemory | None = None,
    ) -> None:
        self.settings = settings
        self.store = Store(settings.database_path)
        self.memory = memory if memory is not None else open_memory(settings)
        self.judge = LazyJudge(judge if judge is not None else open_judge(settings))
        self.engine = SearchEngine(self.store, self.judge, settings.search)
        self.prompts = StepPrompts(self.engine, self.memory)
        self._recorded = set(settings.mcp.record_failures)
        self._bundled: dict[str, Task] | None = None
        self._solutions: set[str] | None = None

    async def close(self) -> None:
        """Stops the judge (its workers and their children); a later evaluation restarts it."""
        await self.judge.close()

    def health(self) -> Health:
        return Health(
            version=adaexplore_mcp.__version__,
            judge=self.judge.devices if self.judge.started else "not started",
            judge_url=self.settings.remote.url,
            store=str(self.store.path),
        )

    # -- tasks ---------------------------------------------------------------------------------

    def list_tasks(self, level: int | None = None) -> TaskList:
        return TaskList(
            tasks=[
                TaskSummary(
                    name=task.name,
                    level=task.level,
                    summary=task.summary,
                    has_solution=task.name in self._solution_names(),
                )
                for task in self._bundled_tasks().values()
                if level is None or task.level == level
            ]
        )

    def get_task(self, ref: str) -> TaskDetail:
        task = self.task(ref)
        return TaskDetail(
            name=task.name,
            level=task.level,
            summary=task.summary,
            description=task.description,
            source=task.source,
            path=str(task.path) if task.path else None,
            hash=task.hash,
            variants=list(task.variants),
            globals=task.globals,
            has_solution=self._is_bundled(task) and task.name in self._solution_names(),
        )

    def _is_bundled(self, task: Task) -> bool:
        bundled = self._bundled_tasks().get(task.name)
        return bundled is not None and bundled.hash == task.hash

    def task(self, ref: str) -> Task:
        """A bundled task by name, or a KernelBench-format task file by path."""
        bundled = self._bundled_tasks()
        if ref in bundled:
            return bundled[ref]
        if _looks_like_path(ref):
            return resolve_task(ref)
        close = difflib.get_close_matches(ref, list(bundled), n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(n) for n in close)}? " if close else ""
        raise TaskError(
            f"no bundled task named {ref!r}; {hint}list_tasks shows the {len(bundled)} bundled "
            "tasks, or pass the path of a KernelBench-format task file (ending in .py)"
        )

    def _bundled_tasks(self) -> dict[str, Task]:
        # parsed once: the bundled files ship with the package and do not change under it
        if self._bundled is None:
            self._bundled = {task.name: task for task in bundled_tasks()}
        return self._bundled

    def _solution_names(self) -> set[str]:
        if self._solutions is None:
            self._solutions = set(solution_names())
        return self._solutions

    # -- the judge and the memory --------------------------------------------------------------

    async def evaluate(
        self,
        ref: str,
        code: str,
        *,
        timeout_s: float | None = None,
        on_progress: ProgressCallback | None = None,
        precision: Precision | None = None,
    ) -> Evaluation:
        task = self.task(ref)
        result = await self.judge.evaluate(
            task, code, timeout_s=timeout_s, on_progress=on_progress, precision=precision
        )
        memory = await self._remember(task.name, code, result)
        return Evaluation.model_validate({**dict(result), "memory": memory})

    def get_rules(
        self, query: str | None = None, task: str | None = None, limit: int | None = None
    ) -> RulesAnswer:
        return self.memory.get_rules(query=query, task=self._task_name(task), limit=limit)

    async def add_failure(
        self,
        task: str,
        code: str,
        error: str,
        *,
        rule: str | None = None,
        error_type: str | None = None,
    ) -> AddFailureResult:
        report = FailureReport(
            task=self.task(task).name,
            code=code,
            error=error,
            error_type=error_type,
            origin="agent",
        )
        return await self.memory.add_failure(report, rule=rule)

    async def _remember(self, task: str, code: str, result: EvalResult) -> AddFailureResult | None:
        """Files a failure of a configured kind in the memory. The evaluation matters more than
        its bookkeeping: a memory that cannot record it is logged, not raised."""
        if result.status.value not in self._recorded:
            return None
        error = result.error
        report = FailureReport(
            task=task,
            code=code,
            error=((error.message if error else "") or result.message)[:_ERROR_CHARS],
            error_type=error.type if error else None,
            verdict=result.status.value,
            torch=result.environment.torch if result.environment else None,
            triton=result.environment.triton if result.environment else None,
            gpu_arch=_gpu_arch(result.environment),
            origin="mcp",
        )
        try:
            return await self.memory.add_failure(report)
        except Exception:
            log.exception("could not record a %s of task %s in the memory", result.status, task)
            return None

    def _task_name(self, ref: str | None) -> str | None:
        if ref is None or not _looks_like_path(ref):
            return ref
        return self.task(ref).name

    # -- searches ------------------------------------------------------------------------------

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
    ) -> SearchInfo:
        defaults = self.settings.search
        budget = Budget(
            max_steps=max_steps or defaults.max_steps,
            max_wall_s=max_wall_s or defaults.max_wall_s,
            max_tokens=max_tokens or defaults.max_tokens,
        )
        updates: dict[str, object] = {"precision": precision or defaults.precision}
        if seed is not None:
            updates["seed"] = seed
        settings = defaults.model_copy(update=updates)
        return self.engine.start_search(
            self.task(ref), budget=budget, settings=settings, label=label, author=author
        )

    def list_searches(self, task: str | None = None, limit: int = 20) -> SearchList:
        return SearchList(
            searches=self.engine.list_searches(task=self._task_name(task), limit=limit)
        )

    def select_node(self, search_id: str, *, author: str | None = None) -> NodeSelection:
        selection = self.engine.select_node(search_id, author=author)
        node = selection.node
        # the rules most relevant to what the step will build on: the node's kernel, else the
        # best kernel of the pool, else the task alone
        query = node.code or (selection.pool[0].code if selection.pool else None)
        task = node.result.task if node.result else self.engine.get_search(search_id).task
        rules = self.memory.get_rules(query=query, task=task)
        if selection.action is Action.SMALL:
            next_call = (
                f'apply_patch(search_id="{search_id}", node_id={node.id}, patches=[{{"old_str": '
                '..., "new_str": ...}]): edit node.code, guided by working_memory and rules '
                "(the small_step prompt renders this context)"
            )
        else:
            next_call = (
                f'regenerate(search_id="{search_id}", node_id={node.id}, code=...): a whole new '
                "kernel, structurally different from the pool (the large_step prompt renders "
                "this context)"
            )
        return NodeSelection.model_validate(
            {**dict(selection), "rules": rules.rules, "next_call": next_call}
        )

    async def apply_patch(
        self,
        search_id: str,
        node_id: int,
        patches: Sequence[Edit],
        *,
        note: str | None = None,
        tokens: int = 0,
        author: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Step:
        step = await self.engine.apply_patch(
            search_id,
            node_id,
            list(patches),
            author=author,
            note=note,
            tokens=tokens,
            on_progress=on_progress,
        )
        return await self._step(step)

    async def regenerate(
        self,
        search_id: str,
        code: str,
        node_id: int | None = None,
        *,
        note: str | None = None,
        tokens: int = 0,
        author: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Step:
        step = await self.engine.regenerate(
            search_id,
            code,
            node_id,
            author=author,
            note=note,
            tokens=tokens,
            on_progress=on_progress,
        )
        return await self._step(step)

    async def _step(self, step: StepResult) -> Step:
        node = step.node
        memory = None
        if node.result is not None and node.code is not None:
            memory = await self._remember(node.result.task, node.code, node.result)
        return Step.model_validate({**dict(step), "memory": memory})

    def release(self, search_id: str, node_id: int) -> Released:
        released = self.engine.release(search_id, node_id)
        return Released(search_id=search_id, node_id=node_id, released=released)

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


def _looks_like_path(ref: str) -> bool:
    """The rule ``resolve_task`` applies: a slash, a .py suffix or an existing file."""
    return ref.endswith(".py") or "/" in ref or Path(ref).expanduser().is_file()


def _gpu_arch(env: Environment | None) -> str | None:
    """How the memory names where a failure happened: 'interpreter', 'sm_90', or the device."""
    if env is None:
        return None
    if env.interpreter:
        return "interpreter"
    if env.capability:
        return "sm_" + env.capability.replace(".", "")
    return env.device_name
