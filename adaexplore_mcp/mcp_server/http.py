"""Streamable HTTP: the MCP endpoint at ``/mcp`` and ``GET /health``, served by uvicorn.

Listening beyond loopback needs a token, because whoever reaches the server runs code on the
judge's machine. With a token, every request (health included) must carry
``Authorization: Bearer <token>``; the comparison takes the same time whatever the guess.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import secrets
import socket

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from adaexplore_mcp.config import McpSettings
from adaexplore_mcp.mcp_server.workbench import Workbench

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"


class BearerAuth:
    """Refuses every HTTP request without the token (401 with ``WWW-Authenticate``)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.expected = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.expected is not None and not self._allowed(scope):
            response = JSONResponse(
                {
                    "error": "unauthorized",
                    "message": "this MCP server requires `Authorization: Bearer <token>` with "
                    "the token it was started with (adaexplore-mcp serve --token, or "
                    "ADAEXPLORE_MCP__TOKEN); configure your client to send it",
                },
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="adaexplore-mcp"'},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        assert self.expected is not None
        values = [v for k, v in scope.get("headers", []) if k.lower() == b"authorization"]
        if len(values) != 1:
            return False
        scheme, _, credentials = values[0].strip().partition(b" ")
        # compare_digest: no early exit, so response times do not reveal a matching prefix
        return secrets.compare_digest(credentials.strip(), self.expected) and (
            scheme.lower() == b"bearer"
        )


def http_app(server: MCPServer, workbench: Workbench, settings: McpSettings) -> ASGIApp:
    """The ASGI app: MCP at ``/mcp``, health at ``/health``, behind the token if one is set.
    Its lifespan runs the server's (which stops the judge on shutdown)."""

    async def health(_: Request) -> Response:
        return JSONResponse(workbench.health().model_dump(mode="json"))

    server.custom_route(HEALTH_PATH, methods=["GET"])(health)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=settings.host)
    return BearerAuth(app, settings.token)


def check_bind(settings: McpSettings) -> None:
    """Refuse to listen beyond this machine without a token."""
    if settings.token or _loopback(settings.host):
        return
    raise ValueError(
        f"refusing to listen on {settings.host} without a token: anyone who can reach it could "
        "run code on this machine through the judge. Pass --token (or set "
        "ADAEXPLORE_MCP__TOKEN), or listen on 127.0.0.1 and reach it through an SSH tunnel"
    )


def _loopback(host: str) -> bool:
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (socket.gaierror, UnicodeError):
        return False
    return bool(addresses) and all(
        ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addresses
    )


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[override]
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
        family, kind, proto, _, address = socket.getaddrinfo(
            settings.host, settings.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        self.socket = socket.socket(family, kind, proto)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind(address)
        except OSError as exc:
            self.socket.close()
            raise ValueError(
                f"cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}"
            ) from None
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, timeout_graceful_shutdown=5
        )
        self._server = _Uvicorn(config)

    @property
    def url(self) -> str:
        """The MCP endpoint's URL."""
        host, port = self.socket.getsockname()[:2]
        base = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
        return base + MCP_PATH

    async def serve(self) -> None:
        """Until SIGINT/SIGTERM or ``stop()``."""
        try:
            await self._server.serve(sockets=[self.socket])
        finally:
            self.socket.close()

    def stop(self) -> None:
        self._server.should_exit = True
