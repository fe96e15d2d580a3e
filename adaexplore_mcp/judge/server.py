"""Running the judge service (``adaexplore-mcp judge serve``): beyond loopback only with a
token, stopped cleanly by SIGINT or SIGTERM."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Callable
from pathlib import Path

import uvicorn

from adaexplore_mcp.config import JudgeSettings, ServiceSettings, database_path
from adaexplore_mcp.judge.pool import LocalJudge
from adaexplore_mcp.judge.service import create_app
from adaexplore_mcp.store import Store


def check_bind(settings: ServiceSettings) -> None:
    """Refuse to listen beyond this machine without a token."""
    if settings.token or _is_loopback(settings.host):
        return
    raise ValueError(
        f"refusing to listen on {settings.host} without a token: anyone who can reach it could "
        "run code on this machine. Pass --token (or set ADAEXPLORE_SERVICE__TOKEN), or listen "
        "on 127.0.0.1 and reach it through an SSH tunnel"
    )


def _is_loopback(host: str) -> bool:
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (socket.gaierror, UnicodeError):
        return False
    return bool(addresses) and all(
        ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addresses
    )


def _bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ValueError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[override]
        # uvicorn re-raises SIGINT/SIGTERM once it has stopped, which would end this process
        # before the judge has stopped its workers; ``serve``'s caller returns normally instead.
        with super().capture_signals():
            try:
                yield
            finally:
                captured = getattr(self, "_captured_signals", None)
                if captured:
                    captured.clear()


async def serve(
    judge_settings: JudgeSettings,
    service_settings: ServiceSettings,
    home: Path,
    *,
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Start the local judge and answer HTTP until SIGINT or SIGTERM."""
    check_bind(service_settings)
    sock = _bind(service_settings.host, service_settings.port)
    try:
        store = Store(database_path(home))
        async with LocalJudge(judge_settings, home=home, store=store) as judge:
            config = uvicorn.Config(
                create_app(judge, service_settings),
                log_level="warning",
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=5,
            )
            server = _Server(config)
            if on_listening is not None:
                on_listening(url_of(sock))
            await server.serve(sockets=[sock])
    finally:
        sock.close()
