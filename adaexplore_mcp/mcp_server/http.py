"""Streamable HTTP: the MCP endpoint at ``/mcp`` and ``GET /health``, served by uvicorn.

Listening beyond loopback needs a token, because whoever reaches the server runs code on the
judge's machine. With a token, every request (health included) must carry
``Authorization: Bearer <token>``; the comparison takes the same time whatever the guess.
"""

from __future__ import annotations

import contextlib
import logging

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp

from adaexplore_mcp.listening import BearerAuth, bind, url_of
from adaexplore_mcp.listening import check_bind as guard_bind
from adaexplore_mcp.mcp_server.settings import McpSettings
from adaexplore_mcp.mcp_server.workbench import Workbench

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"


def _unauthorized() -> Response:
    return JSONResponse(
        {
            "error": "unauthorized",
            "message": "this MCP server requires `Authorization: Bearer <token>` with the token "
            "it was started with (adaexplore-mcp serve --token, or ADAEXPLORE_MCP__TOKEN); "
            "configure your client to send it",
        },
        status_code=401,
        headers={"WWW-Authenticate": 'Bearer realm="adaexplore-mcp"'},
    )


def http_app(server: MCPServer, workbench: Workbench, settings: McpSettings) -> ASGIApp:
    """The ASGI app: MCP at ``/mcp``, health at ``/health``, behind the token if one is set.
    Its lifespan runs the server's (which stops the judge on shutdown)."""

    async def health(_: Request) -> Response:
        return JSONResponse(workbench.health().model_dump(mode="json"))

    server.custom_route(HEALTH_PATH, methods=["GET"])(health)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=settings.host)
    return BearerAuth(app, settings.token, _unauthorized)


def check_bind(settings: McpSettings) -> None:
    """Refuse to listen beyond this machine without a token."""
    guard_bind(settings.host, settings.token, token_variable="ADAEXPLORE_MCP__TOKEN")


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):
        # uvicorn re-raises SIGINT/SIGTERM after it stopped; the lifespan has already closed the
        # judge by then, so the command returns normally instead of dying of the signal.
        with super().capture_signals():
            try:
                yield
            finally:
                getattr(self, "_captured_signals", []).clear()


class HttpServer:
    """The app on a socket bound at construction, so port 0 works and the URL is known before
    serving starts."""

    def __init__(self, app: ASGIApp, settings: McpSettings) -> None:
        check_bind(settings)
        self.socket = bind(settings.host, settings.port)
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, timeout_graceful_shutdown=5
        )
        self._server = _Uvicorn(config)

    @property
    def url(self) -> str:
        """The MCP endpoint's URL."""
        return url_of(self.socket) + MCP_PATH

    async def serve(self) -> None:
        """Until SIGINT/SIGTERM or ``stop()``."""
        try:
            await self._server.serve(sockets=[self.socket])
        finally:
            self.socket.close()

    def stop(self) -> None:
        self._server.should_exit = True
