"""Which client connection a request comes from, and what it gives back when it goes away.

A connection gets a holder name on its first request that needs one; the selections it makes
are leased under that name, and when the connection closes (stdio's pipe, an HTTP session
ended or expired, an in-memory client leaving) its unclaimed selections are given back. Steps
it started go on evaluating and are recorded (``running.py``). The stateless protocol era
(2026-07-28) has no connection beyond one request: there, selections lapse on their own
(``lease_timeout_s``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

log = logging.getLogger(__name__)

_KEY = "adaexplore.holder"


def holder_of(ctx: Context, on_close: Callable[[str], Any]) -> str | None:
    """The connection's holder name, registering ``on_close(holder)`` for its end the first
    time; None where the transport keeps no connection (then nothing is given back early and
    leases lapse on their own)."""
    connection = _connection(ctx)
    if connection is None:
        return None
    holder = connection.state.get(_KEY)
    if holder is None:
        params = connection.client_params
        name = params.client_info.name if params is not None else "client"
        holder = connection.state[_KEY] = f"{name[:40]}#{uuid.uuid4().hex[:8]}"
        connection.exit_stack.callback(_closing, on_close, holder)
    return holder


def _closing(on_close: Callable[[str], Any], holder: str) -> None:
    try:
        on_close(holder)
    except Exception:  # the connection is gone either way; its leases will lapse
        log.exception("could not give back the selections of %s", holder)


def _connection(ctx: Context) -> Any:
    # The SDK keeps per-connection state and teardown on its Connection (``state`` and
    # ``exit_stack`` are documented for handlers), but MCPServer's Context reaches it only
    # through the request's session.
    try:
        session = ctx.session
    except Exception:  # outside a request
        return None
    connection = getattr(session, "_connection", None)
    if connection is None or not hasattr(connection, "exit_stack"):
        return None
    if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None  # stateless: each request has a connection of its own, ended with it
    return connection
