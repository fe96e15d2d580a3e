"""``Workbench``: the one object the MCP tools act on.

It acts on the parts of one ``App`` (``adaexplore_mcp.app``: the judge, started on the first
evaluation, the skill memory and the search engine, all over one store), and adds the little the
tools need on top of them: task lookup by name or path, the active rules next to a selection,
and failures recorded in the memory as the judge reports them. It knows nothing of MCP;
``server.py`` translates.

The app has opened the store already (so a database this version cannot read stops `serve` at
once); its memory, judge and search engine are built by the first tool call that needs one
(``domain.py``), so that `serve` answers `initialize` without importing them.
"""

from __future__ import annotations

import difflib
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

import adaexplore_mcp
from adaexplore_mcp.app import App
from adaexplore_mcp.judge import Environment, EvalParams, EvalResult, ProgressCallback
from adaexplore_mcp.judge.result import kernel_hash
from adaexplore_mcp.mcp_server.answers import Step
from adaexplore_mcp.mcp_server.listing import (
    decode_cursor,
    encode_cursor,
)
from adaexplore_mcp.mcp_server.models import (
    Evaluation,
    Health,
    RulesPage,
    TaskDetail,
    TaskList,
    TaskSummary,
)
from adaexplore_mcp.mcp_server.running import RunningSteps
from adaexplore_mcp.memory import AddFailureResult, FailureReport
from adaexplore_mcp.tasks import (
    Task,
    TaskError,
    bundled_tasks,
    resolve_task,
    solution_names,
)

if TYPE_CHECKING:
    from adaexplore_mcp.judge import LazyJudge
    from adaexplore_mcp.judge.profile import Profiler, ProfileReport
    from adaexplore_mcp.mcp_server.domain import Domain
    from adaexplore_mcp.mcp_server.prompting import StepPrompts
    from adaexplore_mcp.mcp_server.searches import Searches
    from adaexplore_mcp.memory import SkillMemory
    from adaexplore_mcp.search_engine import SearchEngine

log = logging.getLogger(__name__)

# FailureReport's own bound on the error text.
_ERROR_CHARS = 200_000


class Workbench:
    """Tasks, the judge, the memory and the searches of one ``App``. Every method is one
    tool's work; domain errors propagate for the caller to translate."""

    def __init__(self, app: App, *, profiler: Profiler | None = None) -> None:
        self.app = app
        self.settings = settings = app.settings
        self._profiler = profiler
        self.store = app.store
        self._recorded = set(settings.mcp.record_failures)
        # evaluations in flight, by what they evaluate: a request that goes away leaves its
        # evaluation running, and the same request sent again joins it
        self.running: RunningSteps[Step | Evaluation] = RunningSteps()
        self._domain: Domain | None = None
        # the SDK runs a synchronous tool in a worker thread: two first calls build one domain
        self._building = threading.Lock()
        self._bundled: dict[str, Task] | None = None
        self._solutions: set[str] | None = None

    def _built(self) -> Domain:
        with self._building:
            if self._domain is None:
                from adaexplore_mcp.mcp_server.domain import build_domain

                self._domain = build_domain(
                    self.app,
                    self.running,
                    task=self.task,
                    task_name=self._task_name,
                    remember=self._remember,
                )
            return self._domain

    @property
    def memory(self) -> SkillMemory:
        return self._built().memory

    @property
    def judge(self) -> LazyJudge:
        return self._built().judge

    @property
    def engine(self) -> SearchEngine:
        return self._built().engine

    @property
    def prompts(self) -> StepPrompts:
        return self._built().prompts

    @property
    def searches(self) -> Searches:
        return self._built().searches

    async def close(self) -> None:
        """Stops the evaluations in flight (nothing more is recorded) and the judge (its workers
        and their children); a later evaluation restarts it."""
        await self.running.close()
        if self._domain is not None:
            await self._domain.judge.close()

    def health(self) -> Health:
        judge = self._domain.judge if self._domain is not None else None
        return Health(
            version=adaexplore_mcp.__version__,
            judge=judge.devices if judge is not None and judge.started else "not started",
            judge_url=self.settings.remote.url,
            store=str(self.store.path),
        )

    # -- tasks ---------------------------------------------------------------------------------

    def list_tasks(
        self, level: int | None = None, *, limit: int = 50, cursor: str | None = None
    ) -> TaskList:
        offset = decode_cursor("tasks", cursor)
        tasks = [
            task for task in self._bundled_tasks().values() if level is None or task.level == level
        ]
        end = offset + limit
        return TaskList(
            tasks=[
                TaskSummary(
                    name=task.name,
                    level=task.level,
                    summary=task.summary,
                    has_solution=task.name in self._solution_names(),
                )
                for task in tasks[offset:end]
            ],
            next_cursor=encode_cursor("tasks", end) if end < len(tasks) else None,
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
        on_progress: ProgressCallback | None = None,
        **params: Unpack[EvalParams],
    ) -> Evaluation:
        task = self.task(ref)

        async def work(progress: ProgressCallback) -> Evaluation:
            result = await self.judge.evaluate(task, code, on_progress=progress, **params)
            memory = await self._remember(task.name, code, result)
            return Evaluation.model_validate({**dict(result), "memory": memory})

        given = sorted((name, value) for name, value in params.items() if value is not None)
        key = ("evaluate", task.hash, kernel_hash(code), *given)
        return await self.running.run(key, work, on_progress)  # type: ignore[return-value]

    @property
    def profiler(self) -> Profiler:
        """Built on the first profile: the profile package is not needed to answer anything
        else."""
        if self._profiler is None:
            from adaexplore_mcp.judge.profile import Profiler

            self._profiler = Profiler(self.settings.judge, home=self.settings.home)
        return self._profiler

    async def profile(self, ref: str, code: str, *, top: int = 5) -> ProfileReport:
        """Nsight Compute's view of the kernel on this server's GPU: informational, recorded
        nowhere."""
        return await self.profiler.profile(self.task(ref), code, top=top)

    def get_rules(
        self,
        query: str | None = None,
        task: str | None = None,
        limit: int = 10,
        cursor: str | None = None,
    ) -> RulesPage:
        offset = decode_cursor("rules", cursor)
        end = offset + limit
        # a page is bounded by its count (a rule is one sentence of at most 60 words), so the
        # memory's prompt budget does not apply to it
        answer = self.memory.get_rules(
            query=query, task=self._task_name(task), limit=end, token_budget=1 << 30
        )
        return RulesPage(
            rules=answer.rules[offset:end],
            active_total=answer.active_total,
            next_cursor=encode_cursor("rules", end) if end < answer.active_total else None,
        )

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
            precision=result.precision,
            ops=result.ops,
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
