"""One step of a run: its model calls (every prompt and reply written as it happens), the tool
call that judges its kernel, and the ``StepRecord`` it ends with.

A step ends in one of three ways: a node the judge ruled on (the verdict is the outcome), a
counted failure without a node (``patch_failed``, ``unusable_reply``, ``llm_error``: raised as
``StepFailed``), or an error that stops the run (``DriveError``), which leaves the step
unrecorded so that a resumed run does it again.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

from adaexplore_mcp.config.driver import DriverSettings
from adaexplore_mcp.driver.errors import DriveError, JudgeUnreachable, ModelRefused
from adaexplore_mcp.driver.prompts import SYSTEM, Role
from adaexplore_mcp.driver.tools import BudgetSpent, JudgeDown, PatchRefused, ToolFailed, Tools
from adaexplore_mcp.judge.policy import Ops
from adaexplore_mcp.llm import LLM, LLMAuthError, LLMError, LLMNotConfigured, Message
from adaexplore_mcp.mcp_server import Step
from adaexplore_mcp.rundir import MemoryMode, RunDir, StepOutcome, StepRecord, Strategy
from adaexplore_mcp.search_engine import Edit
from adaexplore_mcp.tasks import Task

T = TypeVar("T")
log = logging.getLogger(__name__)

# Verdicts worth a rule that the server may not have filed itself (it files those in
# ADAEXPLORE_MCP__RECORD_FAILURES, by default compile and runtime errors). Wrong values and
# timeouts say nothing about which construct failed, so they are not sent.
_RULE_WORTHY = frozenset({"compile_error", "runtime_error", "rejected"})


class StepFailed(Exception):
    """A step that ends without a node; counted, with its reason."""

    def __init__(self, outcome: StepOutcome, reason: str) -> None:
        super().__init__(reason)
        self.outcome: StepOutcome = outcome
        self.reason = reason


@dataclass
class DrivenTask:
    """One task of a run: its search, the lessons its prompts carry, its finished steps."""

    task: Task
    search_id: str
    precision: str
    ops: Ops = Ops.TRITON  # the search's operator policy; its prompts say what it allows
    lessons: list[str] = field(default_factory=list)
    records: dict[int, StepRecord] = field(default_factory=dict)
    running: set[int] = field(default_factory=set)
    distilled: bool = False

    @property
    def name(self) -> str:
        return self.task.name


class StepContext:
    """What a strategy's step works with; it records as it goes."""

    def __init__(
        self,
        *,
        run: RunDir,
        task: DrivenTask,
        step: int,
        worker: int,
        strategy: Strategy,
        memory: MemoryMode,
        llm: LLM,
        tools: Tools,
        settings: DriverSettings,
    ) -> None:
        self.run = run
        self.task = task
        self.step = step
        self.worker = worker
        self.strategy = strategy
        self.memory = memory
        self.llm = llm
        self.tools = tools
        self.settings = settings
        self.action: str = "sample"
        self.parent_id: int | None = None
        self.rules_in_prompt = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd: float | None = None
        self.started_at = time.time()
        self._prompts: list[str] = []
        self._replies: list[str] = []
        self._calls = 0

    @property
    def author(self) -> str:
        return f"{self.strategy}/worker-{self.worker}"

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    # -- memory --------------------------------------------------------------------------------

    def rules(self, texts: list[str]) -> list[str]:
        """The rules a prompt carries: the memory's with ``--memory rules``, else none."""
        chosen = texts if self.memory == "rules" else []
        self.rules_in_prompt = len(chosen)
        return chosen

    async def rules_for(self, query: str | None) -> list[str]:
        """The active rules relevant to ``query`` (a kernel), through ``get_rules``."""
        if self.memory != "rules":
            return self.rules([])
        answer = await self._tool(self.tools.get_rules(query, self.task.name))
        return self.rules([hit.text for hit in answer.rules])

    # -- the model -----------------------------------------------------------------------------

    async def ask(
        self, role: Role, messages: str | list[Message], *, max_tokens: int | None = None
    ) -> str:
        """The model's reply; the prompt and the reply land in the step's folder as they go."""
        if isinstance(messages, str):
            messages = [Message(role="user", content=messages)]
        self._calls += 1
        system = SYSTEM[role]
        head = f"===== call {self._calls} ({role})"
        turns = [f"{head}: system =====\n{system}"]
        turns += [f"{head}: {m.role} =====\n{m.content}" for m in messages]
        self._prompts.append("\n\n".join(turns))
        self.run.write_prompt(self.task.name, self.step, self._joined_prompts())
        try:
            completion = await self.llm.complete(
                system=system,
                messages=messages,
                max_tokens=max_tokens,
                stream=self.settings.stream,
            )
        except (LLMAuthError, LLMNotConfigured) as exc:
            raise ModelRefused(str(exc)) from exc
        except LLMError as exc:
            raise StepFailed("llm_error", str(exc)) from exc
        usage = completion.usage
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        if usage.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + usage.cost_usd
        cut = " (cut off at max_tokens)" if completion.truncated else ""
        self._replies.append(f"===== call {self._calls} ({role}){cut} =====\n{completion.text}")
        self.run.write_reply(self.task.name, self.step, "\n\n".join(self._replies) + "\n")
        return completion.text

    def _joined_prompts(self) -> str:
        return "\n\n".join(self._prompts) + "\n"

    # -- the tools -----------------------------------------------------------------------------

    async def regenerate(self, code: str, parent: int, note: str | None = None) -> Step:
        """``note``: the model's reasoning for the kernel, kept with the node so that later
        steps of the chain see it in their working memory."""
        self.parent_id = parent
        return await self._tool(
            self.tools.regenerate(
                self.task.search_id,
                code,
                parent,
                tokens=self.tokens,
                author=self.author,
                note=note,
            )
        )

    async def apply_patch(self, node_id: int, edits: list[Edit], note: str | None = None) -> Step:
        """Raises ``PatchRefused`` (the step may repair it) when an edit does not apply.
        ``note``: the plan the edits carry out, kept with the node for later steps."""
        self.parent_id = node_id
        return await self._tool(
            self.tools.apply_patch(
                self.task.search_id,
                node_id,
                edits,
                tokens=self.tokens,
                author=self.author,
                note=note,
            )
        )

    async def release(self, node_id: int) -> None:
        """Gives back a selection the step did not use; a failure to do so only costs budget
        until the lease expires, so it does not fail the step."""
        with contextlib.suppress(ToolFailed):
            await self.tools.release(self.task.search_id, node_id)

    async def _tool(self, call: Awaitable[T]) -> T:
        """A tool call, its errors sorted: a refused patch goes back to the strategy; an
        unreachable judge, a spent budget and anything unexpected stop the run."""
        try:
            return await call
        except PatchRefused:
            raise
        except JudgeDown as exc:
            raise JudgeUnreachable(exc.message) from exc
        except BudgetSpent as exc:
            raise DriveError(
                f"task {self.task.name}: {exc.message}. The run's steps go beyond the search's "
                "budget; start a new run"
            ) from exc
        except ToolFailed as exc:
            raise DriveError(f"task {self.task.name}: {exc.tool} failed: {exc.message}") from exc

    # -- the record ----------------------------------------------------------------------------

    async def judged(self, step: Step) -> StepRecord:
        """The record of a step whose kernel the judge ruled on; files a failure the server did
        not file itself in the rule memory (``--memory rules``). The step's answer carries the
        verdict condensed and not the kernel: the run directory keeps both whole."""
        node = await self.tools.get_node(self.task.search_id, step.node.id)
        result = node.result
        if node.code is not None:
            self.run.write_kernel(self.task.name, self.step, node.code)
        if result is None:  # the server always judges a step; a missing result is a bug there
            raise DriveError(f"task {self.task.name}: node {node.id} came back without a verdict")
        self.run.write_verdict(self.task.name, self.step, result)
        status = result.status.value
        if (
            self.memory == "rules"
            and step.memory is None
            and status in _RULE_WORTHY
            and node.code is not None
        ):
            error = result.error
            try:
                await self.tools.add_failure(
                    self.task.name,
                    node.code,
                    (error.message if error else "") or result.message,
                    error.type if error else None,
                )
            except ToolFailed as exc:  # the memory's bookkeeping must not cost the step
                log.warning("task %s: the failure was not filed: %s", self.task.name, exc)
        timed = result.timing_meaningful and result.runtime is not None
        return self._record(
            status,  # type: ignore[arg-type]
            node_id=node.id,
            speedup_eager=result.speedup_eager,
            speedup_compile=result.speedup_compile,
            runtime_ms=result.runtime.median_ms if timed and result.runtime else None,
        )

    def failed(self, outcome: StepOutcome, reason: str) -> StepRecord:
        return self._record(outcome, reason=reason[:4000])

    def _record(self, outcome: StepOutcome, **fields) -> StepRecord:
        return StepRecord(
            task=self.task.name,
            step=self.step,
            worker=self.worker,
            strategy=self.strategy,
            action=self.action,  # type: ignore[arg-type]
            outcome=outcome,
            parent_id=self.parent_id,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
            rules_in_prompt=self.rules_in_prompt,
            started_at=self.started_at,
            finished_at=time.time(),
            **fields,
        )
