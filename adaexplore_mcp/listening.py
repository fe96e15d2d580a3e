"""What the two HTTP servers (the judge service and the MCP server) share about listening:
whoever reaches either can run code on this machine, so listening beyond loopback needs a
token, and with a token every request must carry it. Both bind their socket before serving, so
port 0 works and the URL is known before the first request."""

from __future__ import annotations

import ipaddress
import secrets
import socket
from collections.abc import Callable

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send


def is_loopback(host: str) -> bool:
    """True when every address ``host`` resolves to is a loopback address."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (socket.gaierror, UnicodeError):
        return False
    return bool(addresses) and all(
        ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addresses
    )


def check_bind(host: str, token: str | None, *, token_variable: str) -> None:
    """Refuse to listen beyond this machine without a token (``ValueError`` says how)."""
    if token or is_loopback(host):
        return
    raise ValueError(
        f"refusing to listen on {host} without a token: anyone who can reach it could run code "
        f"on this machine. Pass --token (or set {token_variable}), or listen on 127.0.0.1 and "
        "reach it through an SSH tunnel"
    )


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``ValueError`` when that fails)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # Listening now, not when uvicorn starts: a client told the URL may connect at once,
        # and its connection waits in the backlog instead of being refused.
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ValueError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>`` when a token
    is set; others get ``reject()``'s response (a 401 with ``WWW-Authenticate``)."""

    def __init__(self, app: ASGIApp, token: str | None, reject: Callable[[], Response]) -> None:
        self.app = app
        self.expected = token.encode() if token else None
        self.reject = reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.expected is not None and not self._allowed(scope):
            await self.reject()(scope, receive, send)
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


def _host_name(header: str) -> str:
    """The name in a Host header, without its port (``[::1]:8765`` is ``::1``)."""
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if ":" in header else header


class RequestLimit:
    """ASGI middleware: at most ``limit`` HTTP requests in the app at once, those whose bodies
    are still arriving included; beyond them ``reject()``'s response at once. Held bodies were
    counted nowhere, and a client could make a service hold as many as it liked."""

    def __init__(self, app: ASGIApp, limit: int, reject: Callable[[], Response]) -> None:
        self.app = app
        self.limit = limit
        self.reject = reject
        self.active = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.active >= self.limit:
            await self.reject()(scope, receive, send)
            return
        self.active += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1


class LoopbackHost:
    """ASGI middleware for a server on the loopback interface with no token (``enforce``):
    a request must name a loopback host by its literal name, else ``reject()``'s response. A
    web page that points a name of its own at 127.0.0.1 (DNS rebinding) then reaches nothing;
    with a token, the token already stops it."""

    NAMES = frozenset({"localhost", "127.0.0.1", "::1"})

    def __init__(self, app: ASGIApp, enforce: bool, reject: Callable[[], Response]) -> None:
        self.app = app
        self.enforce = enforce
        self.reject = reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.enforce and not self._allowed(scope):
            await self.reject()(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        host = next((v for k, v in scope.get("headers", []) if k.lower() == b"host"), b"")
        name = _host_name(host.decode("latin-1")).lower()
        return name in self.NAMES or _loopback_address(name)


def _loopback_address(name: str) -> bool:
    """A loopback IP address, written as one: ``127.0.0.2``, not ``127.evil.example``, a name a
    web page's own DNS may point at 127.0.0.1 (DNS rebinding), which ``127.`` let through."""
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
