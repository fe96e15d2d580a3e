"""What callers need of a judge, local or remote, and the one place that picks which."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, Self, Unpack, runtime_checkable

from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge.pool.local import LocalJudge
from adaexplore_mcp.judge.request import EvalOptions
from adaexplore_mcp.judge.result import EvalResult, LintReport
from adaexplore_mcp.judge.settings import is_ray_address
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import Task


@runtime_checkable
class Judge(Protocol):
    """``LocalJudge`` (a worker pool on this machine), ``RemoteJudge`` (a judge service) and
    ``RayJudge`` (an actor per GPU of a Ray cluster)."""

    @property
    def devices(self) -> list[str]: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc_info: object) -> None: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def evaluate(
        self,
        task: Task,
        code: str,
        **options: Unpack[EvalOptions],
    ) -> EvalResult: ...

    async def lint(self, task: Task, *, device: str | None = None) -> LintReport: ...

    def versions(self) -> dict[str, str]: ...


def open_judge(settings: Settings, *, open_store: Callable[[], Store]) -> Judge:
    """The Ray cluster when ``settings.remote.url`` is 'ray' or 'ray://HOST:PORT', the judge
    service at that URL when it is another, else the local pool. ``open_store`` gives the
    caller's store (``adaexplore_mcp.app``), asked only by the judges that cache baselines in it
    (the local pool, the Ray actors): a judge service keeps its own, and nothing is created
    here for it. Not started: use ``async with open_judge(...) as judge``."""
    if is_ray_address(settings.remote.url):
        from adaexplore_mcp.judge.cluster import RayJudge

        assert settings.remote.url is not None
        return RayJudge(
            settings.remote.url,
            settings.judge,
            settings.ray,
            store=open_store(),
        )
    if settings.remote.url:
        from adaexplore_mcp.judge.service.client import RemoteJudge

        return RemoteJudge(settings.remote)
    return LocalJudge(settings.judge, home=settings.home, store=open_store())
