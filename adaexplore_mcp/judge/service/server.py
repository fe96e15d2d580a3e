"""Running the judge service (``adaexplore-mcp judge serve``): beyond loopback only with a
token, stopped cleanly by SIGINT or SIGTERM."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn

from adaexplore_mcp.config import database_path
from adaexplore_mcp.judge.pool.local import LocalJudge
from adaexplore_mcp.judge.service.app import create_app
from adaexplore_mcp.judge.settings import JudgeSettings, ServiceSettings
from adaexplore_mcp.listening import bind, url_of
from adaexplore_mcp.listening import check_bind as guard_bind
from adaexplore_mcp.store import Store


def check_bind(settings: ServiceSettings) -> None:
    """Refuse to listen beyond this machine without a token."""
    guard_bind(settings.host, settings.token, token_variable="ADAEXPLORE_SERVICE__TOKEN")


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):
        # uvicorn re-raises SIGINT/SIGTERM once it has stopped, which would end this process
        # before the judge has stopped its workers; ``serve``'s caller returns normally instead.
        with super().capture_signals():
            try:
                yield
            finally:
                captured = getattr(self, "_captured_signals", None)
                if captured:
                    captured.clear()


def uvicorn_config(app: Any, **overrides: Any) -> uvicorn.Config:
    """How the service's app is served (the tests serve it the same way)."""
    fields: dict[str, Any] = {
        "log_level": "warning",
        "access_log": False,
        "lifespan": "off",
        "timeout_graceful_shutdown": 5,
    }
    return uvicorn.Config(app, **(fields | overrides))


async def serve(
    judge_settings: JudgeSettings,
    service_settings: ServiceSettings,
    home: Path,
    *,
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Start the local judge and answer HTTP until SIGINT or SIGTERM."""
    check_bind(service_settings)
    sock = bind(service_settings.host, service_settings.port)
    try:
        store = Store(database_path(home))
        async with LocalJudge(judge_settings, home=home, store=store) as judge:
            config = uvicorn_config(create_app(judge, service_settings))
            server = _Server(config)
            if on_listening is not None:
                on_listening(url_of(sock))
            await server.serve(sockets=[sock])
    finally:
        sock.close()
