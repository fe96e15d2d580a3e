"""A run: the tasks, the workers that take their steps, the run directory and resuming it.

    result = await Driver(spec, settings, llm).run()

The driver builds a ``Workbench`` over an ``App`` of the settings (``adaexplore_mcp.app``) and
talks to it only through an in-process MCP client, exactly as an external agent would over
stdio. ``--workers`` workers take (task, step) work from one scheduler: tasks go forward
together, several workers may share one task's search (virtual loss keeps them on different
nodes), and a strategy that builds on its last kernel (refine) takes one step of a task at a
time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from mcp import Client
from pydantic import BaseModel, Field

import adaexplore_mcp
from adaexplore_mcp.app import open_app
from adaexplore_mcp.config import Settings
from adaexplore_mcp.driver.bookkeeping import (
    distil_lesson,
    lessons_for,
    merged_usage,
    summarize,
    task_progress,
)
from adaexplore_mcp.driver.errors import JudgeUnreachable, ModelFailing, RunMismatch, first_error
from adaexplore_mcp.driver.progress import (
    Observer,
    RunProgress,
    RunResult,
)
from adaexplore_mcp.driver.replies import UnusableReply
from adaexplore_mcp.driver.scheduler import Scheduler
from adaexplore_mcp.driver.steps import DrivenTask, StepContext, StepFailed
from adaexplore_mcp.driver.strategies import Strategy, make_strategy
from adaexplore_mcp.driver.tools import ToolFailed, Tools
from adaexplore_mcp.judge import Judge, JudgeError
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.llm import LLM
from adaexplore_mcp.mcp_server import Workbench, build_server
from adaexplore_mcp.memory import LLMDistiller, ReasoningBank
from adaexplore_mcp.rundir import (
    MemoryMode,
    ModelUsage,
    RunConfig,
    RunDir,
    RunDirError,
    StepRecord,
    TaskRecord,
    TaskRunSummary,
)
from adaexplore_mcp.rundir import Strategy as StrategyName
from adaexplore_mcp.tasks import task_from_source

log = logging.getLogger(__name__)


class DriveSpec(BaseModel):
    """What to run. On ``resume`` the run's ``run.json`` decides, and what is given must match."""

    strategy: StrategyName
    memory: MemoryMode = "rules"
    steps: int = Field(ge=1, le=10_000, description="Steps per task.")
    workers: int = Field(default=1, ge=1, le=256)
    tasks: list[str] = Field(
        default_factory=list,
        description="Bundled task names or task-file paths; on resume, empty means the run's.",
    )
    run_dir: Path
    resume: bool = False
    seed: int | None = Field(default=None, description="Seeds the searches' coins and metr.")
    precision: Precision | None = None
    ops: Ops | None = None


def search_budget(steps: int, workers: int) -> int:
    """The searches' own step budget. The run counts its steps itself (a failed patch or an
    unusable reply is a step but no node); the search's budget only has to stay out of the way,
    also of the nodes an interrupted step may have left behind before it is done again."""
    return min(2 * steps + 4 * workers, 100_000)


class Driver:
    def __init__(
        self,
        spec: DriveSpec,
        settings: Settings,
        llm: LLM,
        *,
        judge: Judge | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.spec = spec
        self.llm = llm
        self.replay = bool(getattr(llm, "replay", False))
        # --memory none and reasoning-bank leave the rule memory alone: no rule in any prompt,
        # no failure filed by the server, so a baseline neither reads nor writes it
        if spec.memory != "rules":
            settings = settings.model_copy(
                update={"mcp": settings.mcp.model_copy(update={"record_failures": []})}
            )
        self.settings = settings
        # the rule memory distils with the run's own model, and with none when it files no
        # failure or when the model's replies are replayed
        self._distils = (
            spec.memory == "rules" and settings.memory.distill_with_llm and not self.replay
        )
        self._judge = judge
        self._observer = observer
        self._strategy: Strategy = make_strategy(spec.strategy, spec.seed)
        self.steps = min(spec.steps, self._strategy.max_steps or spec.steps)
        self._tasks: list[DrivenTask] = []
        self._summaries: dict[str, TaskRunSummary] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._llm_errors = 0
        self._usage_before = ModelUsage()
        self._run: RunDir | None = None
        self._config: RunConfig | None = None
        self._bank: ReasoningBank | None = None

    # -- the run -------------------------------------------------------------------------------

    async def run(self) -> RunResult:
        spec = self.spec
        if spec.resume:
            self._run, self._config = RunDir.reopen(spec.run_dir)
            self._check_resume(self._config)
            self._usage_before = self._run.usage()
        app = open_app(
            self.settings,
            judge=self._judge,
            distil=self._distils,
            distiller=LLMDistiller(self.llm) if self._distils else None,
        )
        if spec.memory == "reasoning-bank":
            self._bank = ReasoningBank(app.store, None if self.replay else self.llm)
        bench = Workbench(app)
        try:
            try:
                await bench.judge.start()
            except JudgeError as exc:
                raise JudgeUnreachable(f"the judge could not start: {exc}") from exc
            try:
                async with Client(build_server(bench, close_on_shutdown=False)) as client:
                    await self._drive(client, bench)
            except BaseExceptionGroup as errors:  # the client's task group wraps what it sees
                raise first_error(errors) from None
        finally:
            if self._judge is None:  # a judge passed in belongs to the caller
                await bench.close()
        return self._result()

    async def _drive(self, client: Client, bench: Workbench) -> None:
        tools = Tools(client, queue_full_retries=self.settings.driver.queue_full_retries)
        await self._open(tools, bench)
        try:
            await self._work(tools)
        finally:
            self._write_usage()
        for task in self._tasks:
            await self._distil(task)
        self._write_usage()

    def _check_resume(self, config: RunConfig) -> None:
        spec, differences = self.spec, []
        wanted = {
            "strategy": spec.strategy,
            "memory": spec.memory,
            "steps": self.steps,
            "provider": self.llm.provider,
            "model": self.llm.model,
        }
        for name, value in wanted.items():
            if getattr(config, name) != value:
                differences.append(f"{name}: the run has {getattr(config, name)!r}, not {value!r}")
        if differences:
            raise RunMismatch(
                f"{spec.run_dir} was started with other options ({'; '.join(differences)}); "
                "resume it with the run's own options (leave them out), or start a new run "
                "with another --run-dir"
            )

    async def _open(self, tools: Tools, bench: Workbench) -> None:
        """Creates the run directory (or checks the tasks of the one resumed) and the task
        searches; a search the run already has is continued, never started again."""
        spec = self.spec
        refs: dict[str, str] = {}
        for ref in spec.tasks:
            try:
                detail = await tools.get_task(ref)
            except ToolFailed as exc:
                raise RunDirError(exc.message) from None
            if detail.name in refs:
                raise RunDirError(
                    f"two tasks are named {detail.name!r} ({refs[detail.name]} and {ref}); a "
                    "run keeps one folder per task name, so rename one of the files"
                )
            refs[detail.name] = ref
        if self._config is None:
            if not refs:
                raise RunDirError("no task to run: give --task NAME or --tasks FILE|DIR")
            self._config = RunConfig(
                strategy=spec.strategy,
                memory=spec.memory,
                provider=self.llm.provider,
                model=self.llm.model,
                base_url=self.llm.settings.base_url,
                steps=self.steps,
                workers=spec.workers,
                tasks=list(refs),
                precision=spec.precision or self.settings.search.precision,
                ops=spec.ops or self.settings.search.ops,
                judge=self.settings.remote.url or "local",
                device=",".join(bench.judge.devices) or None,
                replay=self.replay,
                started_at=time.time(),
                version=adaexplore_mcp.__version__,
                home=str(self.settings.home),
            )
            self._run = RunDir.create(spec.run_dir, self._config)
        elif refs and list(refs) != self._config.tasks:
            raise RunMismatch(
                f"{spec.run_dir} runs the tasks {', '.join(self._config.tasks)}, not "
                f"{', '.join(refs)}; leave out --task/--tasks to resume it"
            )
        run, config = self._run, self._config
        assert run is not None
        finished = run.finished()
        for name in config.tasks:
            task = await self._task(tools, run, name, refs.get(name, name))
            task.records = dict(finished.get(name, {}))
            self._tasks.append(task)
            self._locks[name] = asyncio.Lock()
            await self._summarize(tools, task)

    async def _task(self, tools: Tools, run: RunDir, name: str, ref: str) -> DrivenTask:
        assert self._config is not None
        record = run.task_record(name)
        if record is not None and record.search_id is not None:
            try:
                tree = await tools.get_tree(record.search_id)
            except ToolFailed as exc:
                raise RunDirError(
                    f"the search {record.search_id} of task {name} is not in the store at "
                    f"{self.settings.database_path} ({exc.message}); resume with the "
                    "ADAEXPLORE_HOME the run started with"
                ) from None
            if tree.in_flight:  # selections the interrupted run held: nobody will act on them
                for row in tree.nodes:
                    await tools.release(record.search_id, row.id)
        else:
            try:
                detail = await tools.get_task(ref)
                info = await tools.start_search(
                    ref,
                    max_steps=search_budget(self.steps, self.spec.workers),
                    seed=self.spec.seed,
                    label=f"{self._config.strategy} run {run.path.name}",
                    precision=self._config.precision.value,
                    ops=self._config.ops.value,
                )
            except ToolFailed as exc:
                raise RunDirError(f"task {name}: {exc.message}") from None
            record = TaskRecord(
                name=detail.name, hash=detail.hash, source=detail.source, search_id=info.id
            )
            run.write_task(record)
        assert record.search_id is not None
        task = DrivenTask(
            task=task_from_source(record.source, record.name),
            search_id=record.search_id,
            precision=self._config.precision.value,
            ops=self._config.ops,
        )
        if self._bank is not None:
            task.lessons = lessons_for(self._bank, task, run, self.settings.driver.lessons)
        return task

    async def _work(self, tools: Tools) -> None:
        workers = self.spec.workers
        limit = 1 if self._strategy.sequential else workers
        self._scheduler = Scheduler(self._tasks, self.steps, limit, on_change=self._notify)
        self._notify()
        try:
            async with asyncio.TaskGroup() as group:
                for index in range(workers):
                    group.create_task(self._worker(index, tools))
        except BaseExceptionGroup as errors:
            raise first_error(errors) from None

    async def _worker(self, index: int, tools: Tools) -> None:
        while (claim := await self._scheduler.claim()) is not None:
            task, number = claim
            record: StepRecord | None = None
            try:
                record = await self._step(task, number, index, tools)
            finally:
                self._scheduler.release(task, number, record)
            await self._after(task, record, tools)

    async def _step(self, task: DrivenTask, number: int, worker: int, tools: Tools) -> StepRecord:
        run = self._run
        assert run is not None
        run.begin_step(task.name, number)
        ctx = StepContext(
            run=run,
            task=task,
            step=number,
            worker=worker,
            strategy=self.spec.strategy,
            memory=self.spec.memory,
            llm=self.llm,
            tools=tools,
            settings=self.settings.driver,
        )
        try:
            record = await ctx.judged(await self._strategy.step(ctx))
        except StepFailed as failed:
            record = ctx.failed(failed.outcome, failed.reason)
        except UnusableReply as unusable:
            record = ctx.failed("unusable_reply", str(unusable))
        run.finish_step(record)
        return record

    async def _after(self, task: DrivenTask, record: StepRecord, tools: Tools) -> None:
        async with self._locks[task.name]:
            await self._summarize(tools, task)
        self._write_usage()
        self._notify()
        if record.outcome == "llm_error":
            self._llm_errors += 1
            if self._llm_errors >= self.settings.driver.max_llm_errors:
                raise ModelFailing(
                    f"the model failed in {self._llm_errors} steps in a row, the last with: "
                    f"{record.reason}"
                )
        else:
            self._llm_errors = 0
        if len(task.records) >= self.steps:
            await self._distil(task)

    # -- bookkeeping ---------------------------------------------------------------------------

    async def _summarize(self, tools: Tools, task: DrivenTask) -> None:
        assert self._run is not None
        self._summaries[task.name] = await summarize(tools, self._run, task)

    async def _distil(self, task: DrivenTask) -> None:
        """reasoning-bank: the task's lesson, once all its steps are done."""
        if self._bank is None or task.distilled or len(task.records) < self.steps:
            return
        assert self._run is not None
        task.distilled = True
        await distil_lesson(self._bank, self._run, task, self._summaries.get(task.name))

    def _write_usage(self) -> None:
        if self._run is not None:
            self._run.write_usage(self._usage())

    def _usage(self) -> ModelUsage:
        return merged_usage(self._usage_before, self.llm.totals)

    def _notify(self) -> None:
        if self._observer is not None and self._config is not None and self._run is not None:
            self._observer.update(self.progress())

    def progress(self) -> RunProgress:
        assert self._config is not None and self._run is not None
        rows = [
            task_progress(task, self.steps, self._summaries.get(task.name)) for task in self._tasks
        ]
        return RunProgress(
            run_dir=self._run.path, config=self._config, tasks=rows, usage=self._usage()
        )

    def _result(self) -> RunResult:
        assert self._config is not None and self._run is not None
        return RunResult(
            run_dir=self._run.path,
            config=self._config,
            summaries=[self._summaries[t.name] for t in self._tasks if t.name in self._summaries],
            usage=self._usage(),
            steps_done=sum(len(t.records) for t in self._tasks),
            steps_planned=self.steps * len(self._tasks),
        )


async def drive(
    spec: DriveSpec,
    settings: Settings,
    llm: LLM,
    *,
    judge: Judge | None = None,
    observer: Observer | None = None,
) -> RunResult:
    """Runs (or resumes) ``spec`` with ``llm``; see ``Driver``."""
    return await Driver(spec, settings, llm, judge=judge, observer=observer).run()
