"""The strategies: what one step does, in MCP tool calls and model calls.

Every strategy works on one search per task (``start_search``), so every kernel it writes is
judged by the same tools, lands in the store and the tree, and can be read with ``get_tree``
and reported like any other. They differ in which kernel a step builds on and what the model
is shown:

- adaexplore: ``select_node`` picks a node and the step. Small: a reviser call proposes 1-3
  improvements, a tuner call turns them into edits for ``apply_patch`` (one repair round when
  they do not apply). Large: a new kernel unlike the pool, ``regenerate`` under the node.
  A step that makes no node gives its selection back (``release``).
- one-shot: one fresh kernel per task, ``regenerate(node_id=0)``.
- best-of-n: N independent fresh kernels, each ``regenerate(node_id=0)``.
- refine: a whole new version of the latest kernel given its verdict (``get_tree``,
  ``get_node``, ``regenerate(node_id=latest)``); one step of a task at a time.
- metr: a new version of a correct kernel picked with probability by speedup (``get_tree``,
  ``get_node``, ``regenerate(node_id=picked)``); fresh kernels until one is correct.

With ``--memory rules`` prompts carry the active rules (``select_node``'s, or ``get_rules``).
"""

from __future__ import annotations

import asyncio
import random
from abc import ABC, abstractmethod
from typing import ClassVar

from adaexplore_mcp.driver import prompts
from adaexplore_mcp.driver.replies import (
    kernel_from_reply,
    patch_from_reply,
    plan_from_reply,
    reasoning_from_reply,
)
from adaexplore_mcp.driver.steps import StepContext, StepFailed
from adaexplore_mcp.driver.tools import DriverTreeRow, PatchRefused
from adaexplore_mcp.llm import Message
from adaexplore_mcp.mcp_server import NodeSelection, Step
from adaexplore_mcp.rundir import Strategy as StrategyName
from adaexplore_mcp.search_engine import Action, Edit


class Strategy(ABC):
    name: ClassVar[StrategyName]
    sequential: ClassVar[bool] = False  # one step of a task at a time: it builds on the last
    max_steps: ClassVar[int | None] = None  # steps per task whatever --steps says

    @abstractmethod
    async def step(self, ctx: StepContext) -> Step:
        """Takes one step and returns the judged node; raises ``StepFailed`` (or
        ``UnusableReply``) for a step that ends without one."""


async def fresh_kernel(ctx: StepContext) -> Step:
    """A first kernel from the root: the large_step prompt with an empty pool."""
    ctx.action = "sample"
    run = ctx.task
    rules = await ctx.rules_for(None)
    prompt = prompts.large(run.task, run.search_id, 0, [], rules, run.lessons, ops=run.ops)
    reply = await ctx.ask("writer", prompt)
    return await ctx.regenerate(kernel_from_reply(reply), 0, reasoning_from_reply(reply))


async def rewrite(ctx: StepContext, node_id: int) -> Step:
    """A whole new version of a node's kernel, given the judge's verdict on it (refine.txt)."""
    run = ctx.task
    node = await ctx.tools.get_node(run.search_id, node_id)
    ctx.parent_id = node.id
    rules = await ctx.rules_for(node.code)
    prompt = prompts.refine(run.task, run.search_id, node, rules, run.lessons, ops=run.ops)
    reply = await ctx.ask("writer", prompt)
    return await ctx.regenerate(kernel_from_reply(reply), node.id, reasoning_from_reply(reply))


class AdaExplore(Strategy):
    name = "adaexplore"

    async def step(self, ctx: StepContext) -> Step:
        run = ctx.task
        selection = await ctx.tools.select_node(
            run.search_id, ctx.author, context_tokens=ctx.settings.selection_tokens
        )
        node = selection.node
        ctx.parent_id = node.id
        try:
            if selection.action is Action.LARGE:
                return await self._large(ctx, selection)
            return await self._small(ctx, selection)
        except asyncio.CancelledError:
            raise  # the run is stopping; a resumed run releases what it held
        except BaseException:
            await ctx.release(node.id)  # no node came of the selection: give it back
            raise

    async def _large(self, ctx: StepContext, selection: NodeSelection) -> Step:
        ctx.action = "large"
        run = ctx.task
        rules = ctx.rules([hit.text for hit in selection.rules])
        pool = [entry for entry in selection.pool if entry.code is not None]  # within budget
        prompt = prompts.large(
            run.task, run.search_id, selection.node.id, pool, rules, run.lessons, ops=run.ops
        )
        reply = await ctx.ask("writer", prompt)
        code = kernel_from_reply(reply)
        return await ctx.regenerate(code, selection.node.id, reasoning_from_reply(reply))

    async def _small(self, ctx: StepContext, selection: NodeSelection) -> Step:
        ctx.action = "small"
        run, node = ctx.task, selection.node
        rules = ctx.rules([hit.text for hit in selection.rules])
        memory = selection.working_memory
        reviser = prompts.revise(
            run.task, run.search_id, node, memory, rules, run.lessons, ops=run.ops
        )
        plan = plan_from_reply(
            await ctx.ask("reviser", reviser, max_tokens=ctx.settings.reviser_max_tokens)
        )
        tuner = prompts.tune(
            run.task, run.search_id, node, memory, rules, run.lessons, plan, ops=run.ops
        )
        conversation = [Message(role="user", content=tuner)]
        reply = await ctx.ask("tuner", conversation)
        try:
            return await ctx.apply_patch(node.id, _edits(reply), note=plan)
        except PatchRefused as refused:
            if not ctx.settings.repair_patch:
                raise StepFailed("patch_failed", refused.message) from None
            first = refused.message
        # one repair round: the model sees why its edits did not apply
        conversation += [
            Message(role="assistant", content=reply),
            Message(role="user", content=prompts.repair(first)),
        ]
        reply = await ctx.ask("tuner", conversation)
        try:
            return await ctx.apply_patch(node.id, _edits(reply), note=plan)
        except PatchRefused as again:
            raise StepFailed(
                "patch_failed", f"{first}\nafter one repair round: {again.message}"
            ) from None


def _edits(reply: str) -> list[Edit]:
    return [Edit(old_str=e.old_str, new_str=e.new_str) for e in patch_from_reply(reply).edits]


class OneShot(Strategy):
    name = "one-shot"
    max_steps = 1

    async def step(self, ctx: StepContext) -> Step:
        return await fresh_kernel(ctx)


class BestOfN(Strategy):
    name = "best-of-n"

    async def step(self, ctx: StepContext) -> Step:
        return await fresh_kernel(ctx)


class Refine(Strategy):
    name = "refine"
    sequential = True

    async def step(self, ctx: StepContext) -> Step:
        tree = await ctx.tools.get_tree(ctx.task.search_id)
        kernels = [row for row in tree.nodes if row.action != "root"]
        if not kernels:
            return await fresh_kernel(ctx)
        ctx.action = "refine"
        return await rewrite(ctx, kernels[-1].id)


class Metr(Strategy):
    """METR's baseline: improve a previous kernel picked with probability proportional to its
    speedup; a correct kernel without a meaningful speedup (the CPU) weighs
    ``metr_unmeasured_weight``. Failed kernels are never picked."""

    name = "metr"

    def __init__(self, seed: int | None = None) -> None:
        self._seed = seed
        self._random: dict[str, random.Random] = {}

    async def step(self, ctx: StepContext) -> Step:
        tree = await ctx.tools.get_tree(ctx.task.search_id)
        correct = [row for row in tree.nodes if row.status == "correct"]
        if not correct:
            return await fresh_kernel(ctx)
        ctx.action = "sample"
        weights = [self._weight(row, ctx.settings.metr_unmeasured_weight) for row in correct]
        picked = self._rng(ctx.task.name).choices(correct, weights=weights)[0]
        return await rewrite(ctx, picked.id)

    @staticmethod
    def _weight(row: DriverTreeRow, unmeasured: float) -> float:
        if row.speedup is None:
            return unmeasured
        return max(row.speedup, 1e-3)

    def _rng(self, task: str) -> random.Random:
        if task not in self._random:
            seed = None if self._seed is None else f"{self._seed}:{task}"
            self._random[task] = random.Random(seed)
        return self._random[task]


def make_strategy(name: StrategyName, seed: int | None = None) -> Strategy:
    if name == "adaexplore":
        return AdaExplore()
    if name == "one-shot":
        return OneShot()
    if name == "best-of-n":
        return BestOfN()
    if name == "refine":
        return Refine()
    if name == "metr":
        return Metr(seed)
    raise ValueError(f"no strategy named {name!r}: adaexplore, one-shot, best-of-n, refine, metr")
