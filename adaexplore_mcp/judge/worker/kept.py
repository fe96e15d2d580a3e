"""An evaluation's task process, kept by its worker for the next evaluation of the same task.

A search evaluates kernel after kernel of one task. Each evaluation's task process cost a fork,
a sandbox, a CUDA context (0.27 s alone on an H200, about 0.6 s while other workers make theirs,
and a stall of the GPU for every process meanwhile) and the task's import. Since the task's
process never sees a candidate, a seed or the verdict, one process can serve the evaluations of
one task in turn (``reference.harness.serve``):

- only a task with the same identity (``wire.jobs.task_identity``: its whole definition) and the
  same process plan (device, sandbox, limits) is served by it: no other task's code ever runs
  in a process a task ran in, so one user's task cannot poison another's reference;
- it is kept only after an evaluation that ended in a report which is not the task's failure;
  a timeout, a cancellation, a crash or a task error ends it;
- it says it is ready again (``DevicePrepared``) once it has let go of the job's memory; a
  process that has not said so within ``READY_PATIENCE_S``, has ended, served ``MAX_JOBS``
  evaluations or spent half its CPU-time limit (it then ends itself) is replaced by a fresh one;
- memory the trusted process shares with it is never freed while the resident trusted process
  lives (``trusted.resident``), so no secret of a later job lands where it could still write.

The worker keeps one at a time; the pool sends a worker the evaluations of the task it keeps
when it can (``pool.lane``).
"""

from __future__ import annotations

import contextlib
import os
import select
import socket

from adaexplore_mcp.judge.wire.frames import encode
from adaexplore_mcp.judge.wire.jobs import ChildJob, DevicePrepared, task_identity
from adaexplore_mcp.judge.worker.processes import Forked, ForkPlan

MAX_JOBS = 100
READY_PATIENCE_S = 5.0
READY_FRAME = encode(DevicePrepared())


def kept_key(plan: ForkPlan, job: ChildJob) -> str | None:
    """The key under which ``job``'s task process may be kept, or None (not an evaluation)."""
    identity = task_identity(job)
    if identity is None:
        return None
    return f"{identity} {plan.kind_key()}"


class KeptTask:
    def __init__(self, key: str, process: Forked) -> None:
        assert process.sock is not None
        self.key = key
        self.process = process
        self.jobs = 1

    def ready(self, patience_s: float) -> bool:
        """Alive, and its ready word, and nothing else, waits on its socket (the trusted process
        reads it, not the worker): a process with anything else to say is out of step."""
        sock = self.process.sock
        assert sock is not None
        if not self.process.alive():
            return False
        readable, _, _ = select.select([sock], [], [], patience_s)
        if not readable:
            return False
        try:
            waiting = sock.recv(len(READY_FRAME) + 1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:
            return False
        return waiting == READY_FRAME


class KeptTasks:
    """The worker's one kept task process."""

    def __init__(self) -> None:
        self._kept: KeptTask | None = None

    def take(self, key: str | None) -> Forked | None:
        """The kept process if it may serve a job of ``key`` and is ready for it; any other
        kept process is ended."""
        kept, self._kept = self._kept, None
        if kept is None:
            return None
        if key == kept.key and kept.jobs < MAX_JOBS and kept.ready(READY_PATIENCE_S):
            self._kept = kept  # until the job is over: its pid is the worker's to keep
            return kept.process
        kept.process.end()
        return None

    def keep(self, key: str, process: Forked) -> None:
        """Keep ``process`` after a job that ended cleanly."""
        if self._kept is not None and self._kept.process is process:
            self._kept.jobs += 1
            return
        self.close()
        if process.setup_fd is not None:  # its sandbox report was read in its first job
            with contextlib.suppress(OSError):
                os.close(process.setup_fd)
            process.setup_fd = None
        self._kept = KeptTask(key, process)

    def release(self, process: Forked) -> None:
        """End ``process`` (after a job that did not end cleanly), kept or not."""
        if self._kept is not None and self._kept.process is process:
            self._kept = None
        process.end()

    def pids(self) -> set[int]:
        return {self._kept.process.pid} if self._kept is not None else set()

    def close(self) -> None:
        if self._kept is not None:
            self._kept.process.end()
            self._kept = None
