"""`adaexplore-mcp serve`: the MCP server over stdio (for a client that starts it) or streamable
HTTP (for clients that connect to it)."""

from __future__ import annotations

import logging
import sys
from enum import StrEnum
from typing import Annotated

import anyio
import typer

from adaexplore_mcp.cli.common import (
    DeviceOption,
    JudgeTokenOption,
    JudgeUrlOption,
    err,
    fail,
    settings_with,
)


class Transport(StrEnum):
    STDIO = "stdio"
    HTTP = "http"


def serve_command(
    transport: Annotated[
        Transport | None,
        typer.Option(
            help="stdio (the client starts this command) or http (streamable HTTP at /mcp). "
            "Default: ADAEXPLORE_MCP__TRANSPORT or stdio.",
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(help="HTTP: address to listen on. Default: 127.0.0.1."),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(min=0, max=65535, help="HTTP: port. Default: 8766; 0 picks a free one."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="HTTP: bearer token every request must carry; required beyond loopback. "
            "Default: ADAEXPLORE_MCP__TOKEN."
        ),
    ] = None,
    judge_url: JudgeUrlOption = None,
    judge_token: JudgeTokenOption = None,
    device: DeviceOption = None,
) -> None:
    """Serve the MCP tools, resources and prompts (docs/mcp.md). The judge starts on the first
    evaluation, on --device or on the judge service given with --judge."""
    from adaexplore_mcp.app import open_app
    from adaexplore_mcp.mcp_server import Workbench, build_server

    try:
        settings = settings_with(device, judge_url=judge_url, judge_token=judge_token)
        overrides = {"transport": transport, "host": host, "port": port, "token": token}
        mcp = settings.mcp.model_validate(
            settings.mcp.model_dump() | {k: v for k, v in overrides.items() if v is not None}
        )
    except ValueError as exc:
        raise fail(str(exc)) from None
    settings = settings.model_copy(update={"mcp": mcp})
    # stdout is the protocol's channel on stdio: logging goes to stderr only
    logging.basicConfig(level=mcp.log_level, stream=sys.stderr, format="%(levelname)s %(message)s")
    workbench = Workbench(open_app(settings))
    server = build_server(workbench)
    if mcp.transport == "stdio":
        anyio.run(server.run_stdio_async)
        return

    from adaexplore_mcp.mcp_server import HttpServer, http_app

    try:
        http = HttpServer(http_app(server, workbench, mcp), mcp)
    except ValueError as exc:
        raise fail(str(exc)) from None
    auth = "a bearer token required" if mcp.token else "no token: this machine only"
    err.print(f"MCP server listening on {http.url} ({auth})", markup=False)
    err.print(f"health: {http.url.removesuffix('/mcp')}/health", markup=False)
    anyio.run(http.serve)
