"""The processes of the next evaluation, started while the current one runs.

Starting a job's processes costs a fork each and, on a GPU, a CUDA context each: the driver
makes contexts one at a time (0.33 s for one, 0.82 s for four at once, on an H200), so an
evaluation that started its own processes spent that long before its first compile. A spare
set is forked from the same plan as the job that came before, once that job is past its first
compile (its own contexts made); each process makes its context and waits for its job. A job
whose plan differs (another device, other limits), or whose spare set lost a process, gets a
fresh set instead, and the spare set is ended. The processes of a spare set hold no job, no
code and no task until their own job comes, and serve that one job only.

A job whose task process is kept from the last evaluation (``worker.kept``) needs no task
process from its set: the spare one is set aside, still unused, for the next job of another
task, so that a search switching tasks does not wait for a fork and a context either. At most
one is set aside; only while one is does a spare set leave the task's role out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable

from adaexplore_mcp.judge.worker.processes import USER_ROLES, Forked, ForkPlan, Started, start

_SET_ASIDE_ROLE = "task"


class Spares:
    def __init__(self, new_root: Callable[[], str]) -> None:
        self._new_root = new_root
        self._set: Started | None = None
        self._aside: tuple[str, Forked] | None = None  # (its plan's kind key, a task process)

    def start(self, plan: ForkPlan) -> Started:
        """The processes for ``plan``: the spare set where it fits (a process of a role the plan
        lacks set aside or ended, one of a role the spare set lacks taken from aside or forked
        now), else a fresh set."""
        spare, self._set = self._set, None
        if spare is not None and not (spare.plan.kind_key() == plan.kind_key() and spare.alive()):
            end(spare)
            spare = None
        if spare is None:
            spare = Started(
                dataclasses.replace(plan, roles=(), fallback_root=self._new_root()), [], {}
            )
        return self._fitted(spare, plan)

    def fill(self, plan: ForkPlan) -> None:
        """Start a spare set for a job like ``plan``'s, unless one is waiting; without the
        task's process when one of this kind is set aside."""
        if self._set is not None:
            return
        if self._aside_for(plan.kind_key()) is not None:
            plan = plan.without(_SET_ASIDE_ROLE)
        self._set = start(dataclasses.replace(plan, fallback_root=self._new_root()))

    def pids(self) -> set[int]:
        pids = {process.pid for process in self._set.processes} if self._set else set()
        if self._aside is not None:
            pids.add(self._aside[1].pid)
        return pids

    def close(self) -> None:
        if self._set is not None:
            end(self._set)
            self._set = None
        if self._aside is not None:
            self._aside[1].end()
            self._aside = None

    def _aside_for(self, kind_key: str) -> Forked | None:
        """The process set aside, if it can serve a plan of ``kind_key``; ended otherwise."""
        if self._aside is None:
            return None
        key, process = self._aside
        if key == kind_key and process.alive():
            return process
        process.end()
        self._aside = None
        return None

    def _fitted(self, spare: Started, plan: ForkPlan) -> Started:
        for role in [p.role for p in spare.processes if p.role not in plan.roles]:
            unwanted = spare.detach(role)
            assert unwanted is not None
            if role == _SET_ASIDE_ROLE and self._aside_for(plan.kind_key()) is None:
                self._aside = (plan.kind_key(), unwanted)
            else:
                unwanted.end()
        if _SET_ASIDE_ROLE in plan.roles and _SET_ASIDE_ROLE not in _roles(spare):
            aside = self._aside_for(plan.kind_key())
            if aside is not None:
                self._aside = None
                assert aside.sock is not None
                spare.sockets[_SET_ASIDE_ROLE], aside.sock = aside.sock, None
                spare.processes.append(aside)
        missing = tuple(r for r in plan.roles if r in USER_ROLES and r not in _roles(spare))
        plan = dataclasses.replace(plan, fallback_root=spare.plan.fallback_root)
        if missing:
            extra = start(dataclasses.replace(plan, roles=missing))
            spare.processes += extra.processes
            spare.sockets.update(extra.sockets)
        spare.plan = plan
        return spare


def end(started: Started) -> None:
    """Kill a set's processes, which removes their scratch directories; a process taken out of
    the set keeps its own."""
    started.end()
    with contextlib.suppress(OSError):  # not empty while a process taken out of it lives
        os.rmdir(started.plan.fallback_root)


def _roles(started: Started) -> set[str]:
    return {process.role for process in started.processes}
