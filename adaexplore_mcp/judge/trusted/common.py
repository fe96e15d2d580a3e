"""What the trusted process's jobs share: the device, the GPU lock, a task's failure."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch

from adaexplore_mcp.judge.result import EvalResult
from adaexplore_mcp.judge.trusted.gpulock import GpuLock, NoHold
from adaexplore_mcp.judge.trusted.link import Link, SubjectFailed
from adaexplore_mcp.judge.trusted.report import TaskFailed
from adaexplore_mcp.judge.wire.jobs import ChildJob
from adaexplore_mcp.judge.wire.subject import SubjectError
from adaexplore_mcp.tasks import Task


def device_of(job: ChildJob) -> torch.device:
    # A GPU job's processes see exactly one GPU (CUDA_VISIBLE_DEVICES), whatever it is called.
    return torch.device("cpu") if job.device == "cpu" else torch.device("cuda", 0)


def gpu_lock(job: ChildJob) -> tuple[Any, Any]:
    """(shared, exclusive) context-manager factories; no-ops on the CPU. What ``shared`` gives
    can be let go and taken again within its block (``gpulock.SharedHold``)."""
    return lock_holds(job.gpu_lock if job.device != "cpu" else None)


def lock_holds(path: str | None) -> tuple[Any, Any]:
    """(shared, exclusive) of the GPU lock at ``path``; no-ops without one."""
    if not path:
        return NoHold, nullcontext
    lock = GpuLock(path)
    return lock.shared, lock.exclusive


def task_failure(task: Task, error: SubjectError) -> TaskFailed:
    """The task's own code failed: where, as the user knows the file."""
    shown = str(task.path) if task.path else f"task {task.name!r}"
    where = f" at {shown}:{error.frames[-1].line}" if error.frames else ""
    return TaskFailed(f"task {task.name!r}: {error.message}{where} ({error.type})")


def ask_task(link: Link, task: Task, request: Any, expect: type) -> tuple[Any, bytes]:
    """A request to the task's process; an error there is the task's failure."""
    try:
        return link.ask(request, expect=expect)
    except SubjectFailed as failure:
        raise task_failure(task, failure.answer.error) from None


class EarlyVerdict(Exception):
    """Ends the evaluation early with a non-correct result."""

    def __init__(self, result: EvalResult) -> None:
        self.result = result
