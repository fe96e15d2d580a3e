"""The processes of the next evaluation, started while the current one runs.

Starting a job's processes costs a fork each and, on a GPU, a CUDA context each: the driver
makes contexts one at a time (0.33 s for one, 0.82 s for four at once, on an H200), so an
evaluation that started its own processes spent that long before its first compile. A spare
set is forked from the same plan as the job that came before, once that job is past its first
compile (its own contexts made); each process makes its context and waits for its job. A job
whose plan differs (another device, other limits), or whose spare set lost a process, gets a
fresh set instead, and the spare set is ended. The processes of a spare set hold no job, no
code and no task until their own job comes, and serve that one job only.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable

from adaexplore_mcp.judge.worker.processes import USER_ROLES, ForkPlan, Started, start


class Spares:
    def __init__(self, new_root: Callable[[], str]) -> None:
        self._new_root = new_root
        self._set: Started | None = None

    def start(self, plan: ForkPlan) -> Started:
        """The processes for ``plan``: the spare set where it fits (a process of a role the plan
        lacks ended, one of a role the spare set lacks forked now), else a fresh set."""
        spare, self._set = self._set, None
        if spare is not None:
            if spare.plan.kind_key() == plan.kind_key() and spare.alive():
                return _fitted(spare, plan)
            end(spare)
        return start(dataclasses.replace(plan, fallback_root=self._new_root()))

    def fill(self, plan: ForkPlan) -> None:
        """Start a spare set for a job like ``plan``'s, unless one is waiting."""
        if self._set is None:
            self._set = start(dataclasses.replace(plan, fallback_root=self._new_root()))

    def pids(self) -> set[int]:
        return {process.pid for process in self._set.processes} if self._set else set()

    def close(self) -> None:
        if self._set is not None:
            end(self._set)
            self._set = None


def end(started: Started) -> None:
    """Kill a set's processes and remove its scratch directories."""
    started.end()
    shutil.rmtree(started.plan.fallback_root, ignore_errors=True)


def _fitted(spare: Started, plan: ForkPlan) -> Started:
    for role in [p.role for p in spare.processes if p.role not in plan.roles]:
        unwanted = spare.detach(role)
        assert unwanted is not None
        unwanted.end()
    have = {p.role for p in spare.processes}
    missing = tuple(role for role in plan.roles if role in USER_ROLES and role not in have)
    plan = dataclasses.replace(plan, fallback_root=spare.plan.fallback_root)
    if missing:
        extra = start(dataclasses.replace(plan, roles=missing))
        spare.processes += extra.processes
        spare.sockets.update(extra.sockets)
    spare.plan = plan
    return spare
