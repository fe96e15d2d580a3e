"""Taking steps: a patch or a new kernel under a parent, evaluated by the judge and recorded as a
node, under a lease that holds its share of the budget (``leases``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from sqlite3 import Connection
from typing import Unpack

from adaexplore_mcp.judge.result import ProgressCallback
from adaexplore_mcp.search_engine import budget as budgets
from adaexplore_mcp.search_engine import leases
from adaexplore_mcp.search_engine import repository as repo
from adaexplore_mcp.search_engine.core import EngineCore
from adaexplore_mcp.search_engine.errors import InvalidStep
from adaexplore_mcp.search_engine.models import Action, Edit, StepResult
from adaexplore_mcp.search_engine.patching import apply_edits
from adaexplore_mcp.search_engine.repository import SearchRecord
from adaexplore_mcp.search_engine.steps import StepAuthorship, StepRequest
from adaexplore_mcp.search_engine.tree import Tree
from adaexplore_mcp.search_engine.views import node_view


class Stepping(EngineCore):
    """The step methods of ``SearchEngine``."""

    def patch_step(
        self,
        search_id: str,
        node_id: int,
        edits: Sequence[Edit | dict],
        **authorship: Unpack[StepAuthorship],
    ) -> StepRequest:
        """A small step, ready to take: the edits applied to the node's kernel. A patch that
        does not apply raises ``PatchError``; nothing is evaluated or recorded."""
        parsed = [edit if isinstance(edit, Edit) else Edit.model_validate(edit) for edit in edits]
        with self._open(search_id) as (conn, _, tree):
            self._check_node(tree, search_id, node_id)
            if tree[node_id].action is Action.ROOT:
                raise InvalidStep(
                    "node 0 is the root: it stands for the task's reference and holds no kernel "
                    "to patch; write a whole kernel with regenerate(search_id, code)"
                )
            code = repo.codes(conn, search_id, [node_id])[node_id]
        return StepRequest(
            parent=node_id,
            action=Action.SMALL,
            code=apply_edits(code, parsed),
            edits=parsed,
            **authorship,
        )

    def regenerate_step(
        self,
        search_id: str,
        code: str,
        node_id: int | None = None,
        **authorship: Unpack[StepAuthorship],
    ) -> StepRequest:
        """A large step, ready to take: a whole new kernel under ``node_id`` (the root when
        omitted)."""
        parent = 0 if node_id is None else node_id
        with self._open(search_id) as (_, _, tree):
            self._check_node(tree, search_id, parent)
        if not code.strip():
            raise InvalidStep("the kernel is empty; send the whole source defining ModelNew")
        return StepRequest(parent=parent, action=Action.LARGE, code=code, **authorship)

    async def apply_patch(
        self,
        search_id: str,
        node_id: int,
        edits: Sequence[Edit | dict],
        *,
        on_progress: ProgressCallback | None = None,
        **authorship: Unpack[StepAuthorship],
    ) -> StepResult:
        """Small step: ``patch_step`` then ``take``."""
        step = self.patch_step(search_id, node_id, edits, **authorship)
        return await self.take(search_id, step, on_progress)

    async def regenerate(
        self,
        search_id: str,
        code: str,
        node_id: int | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        **authorship: Unpack[StepAuthorship],
    ) -> StepResult:
        """Large step: ``regenerate_step`` then ``take``."""
        step = self.regenerate_step(search_id, code, node_id, **authorship)
        return await self.take(search_id, step, on_progress)

    async def take(
        self,
        search_id: str,
        step: StepRequest,
        on_progress: ProgressCallback | None = None,
        *,
        holder: str | None = None,
    ) -> StepResult:
        """Evaluate a step and record its node. A kernel the search already holds (under any
        parent) is not evaluated again: that node comes back with ``reused``, no step is spent
        and the selection the step answered is given back."""
        judge = self._require_judge()
        with self._open(search_id) as (conn, record, tree):
            task = self._task(record)
            settings = record.settings
            now = self._clock()
            twin = repo.node_with_code(conn, search_id, step.code)
            if twin is not None:
                leases.release_unclaimed(conn, search_id, step.parent, holder)
                # the caller spent its tokens all the same
                repo.add_usage(conn, search_id, now, tokens=step.tokens)
                return self._step_result(conn, record, tree, twin, improved=False, reused=True)
            lease_id = self._claim(conn, record, step, holder, now)
        keeper = asyncio.ensure_future(self._keep(lease_id, settings.lease_timeout_s))
        try:
            result = await judge.evaluate(
                task,
                step.code,
                on_progress=on_progress,
                precision=settings.precision,
                ops=settings.ops,
            )
        except BaseException:
            # cancelled, or the judge could not run: nothing was recorded, so only the lease goes
            with self._lock, self.store.connect() as conn:
                leases.delete(conn, lease_id)
            raise
        finally:
            keeper.cancel()
        node = step.judged(result, settings)
        # the node, its backed-up statistics, the lease and the usage: one transaction
        with self._open(search_id) as (conn, _, tree):
            best_before = tree.best_id
            now = self._clock()
            node_id = repo.insert_node(conn, search_id, node, now)
            leases.delete(conn, lease_id)
            repo.add_usage(conn, search_id, now, steps=1, evaluations=1, tokens=step.tokens)
        with self._open(search_id) as (conn, record, tree):
            improved = tree.best_id == node_id != best_before
            return self._step_result(conn, record, tree, node_id, improved=improved)

    def _claim(
        self,
        conn: Connection,
        record: SearchRecord,
        step: StepRequest,
        holder: str | None,
        now: float,
    ) -> int:
        """The lease the step evaluates under: its selection's, else a new one that must fit
        the budget itself."""
        expires_at = now + record.settings.lease_timeout_s
        lease_id = leases.claim(
            conn, record.id, step.parent, holder=holder, now=now, expires_at=expires_at
        )
        if lease_id is not None:  # the selection reserved the step; time and tokens may be spent
            budgets.check(record, 0, now, steps=False)
            return lease_id
        leases.purge_expired(conn, record.id, now)
        budgets.check(record, len(leases.active(conn, record.id, now)), now)
        return leases.add(
            conn,
            record.id,
            step.parent,
            step.action,
            author=step.author,
            holder=holder,
            claimed=True,
            now=now,
            expires_at=expires_at,
        )

    async def _keep(self, lease_id: int, timeout_s: float) -> None:
        """Renews an evaluating step's lease, so that it lapses only if this process dies."""
        while True:
            await asyncio.sleep(timeout_s / 3)
            with self._lock, self.store.connect() as conn:
                leases.renew(conn, lease_id, self._clock() + timeout_s)

    def _step_result(
        self,
        conn: Connection,
        record: SearchRecord,
        tree: Tree,
        node_id: int,
        *,
        improved: bool,
        reused: bool = False,
    ) -> StepResult:
        now = self._clock()
        spent = budgets.exhausted(record, 0, now)
        return StepResult(
            search_id=record.id,
            node=node_view(repo.full_nodes(conn, record.id, [node_id])[node_id], tree[node_id]),
            improved=improved,
            best_node_id=tree.best_id,
            usage=budgets.usage(record, len(leases.active(conn, record.id, now)), now),
            exhausted=spent[0] if spent else None,
            reused=reused,
        )
