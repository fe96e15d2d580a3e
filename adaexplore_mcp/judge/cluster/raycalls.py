"""Calls into Ray as the judge makes them: Ray imported only when a cluster judge starts, an
actor's exception raised as the local judge would raise it, and the errors that mean an actor
(not the kernel it was judging) was lost."""

from __future__ import annotations

from typing import Any

from adaexplore_mcp.judge.exceptions import JudgeError, JudgeUnavailable
from adaexplore_mcp.tasks import TaskError

# what an actor may raise that the local judge raises too: passed on as it is
_PASSED_ON = (JudgeError, TaskError, ValueError)


async def awaited(ref: Any) -> Any:
    """The value of a Ray object reference; an actor's exception raised as the local judge
    would raise it."""
    try:
        return await ref
    except ray_task_error() as exc:
        raise translated(exc, "a judge actor failed") from None


def translated(exc: BaseException, what: str) -> BaseException:
    cause = getattr(exc, "cause", None)
    if isinstance(cause, _PASSED_ON):
        return cause
    if isinstance(exc, (*_PASSED_ON, *ray_actor_errors())):
        return exc
    return JudgeError(f"{what}: {first_line(cause or exc)}")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise JudgeUnavailable(
            "--judge ray needs Ray on this machine and on every node of the cluster: "
            "pip install 'adaexplore-mcp[ray]'"
        ) from None
    return ray


def ray_actor_errors() -> tuple[type[Exception], ...]:
    from ray.exceptions import RayActorError

    return (RayActorError,)


def ray_task_error() -> type[Exception]:
    from ray.exceptions import RayTaskError

    return RayTaskError
