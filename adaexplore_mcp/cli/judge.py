"""`adaexplore-mcp judge serve`: the judge over HTTP."""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated

import typer

from adaexplore_mcp.cli.common import (
    EXIT_JUDGE,
    DeviceOption,
    err,
    fail,
    out,
    settings_with,
)
from adaexplore_mcp.judge import JudgeError

app = typer.Typer(help="Run the judge as a service for other machines.", no_args_is_help=True)


@app.command("serve")
def judge_serve(
    host: Annotated[
        str | None,
        typer.Option(help="Address to listen on. Default: ADAEXPLORE_SERVICE__HOST or 127.0.0.1."),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            min=0, max=65535, help="Default: ADAEXPLORE_SERVICE__PORT or 8765; 0 picks a free one."
        ),
    ] = None,
    gpus: Annotated[
        str | None,
        typer.Option(help="GPU indices to serve, e.g. 0,1 (the same as --device cuda:0,1)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="Bearer token every request must carry; required to listen beyond loopback. "
            "Default: ADAEXPLORE_SERVICE__TOKEN."
        ),
    ] = None,
    device: DeviceOption = None,
) -> None:
    """Serve the judge over HTTP (docs/judge-service.md) until Ctrl-C; clients use it with
    --judge URL."""
    from adaexplore_mcp.judge.service.server import serve

    if gpus is not None and device is not None:
        raise fail("give --gpus or --device, not both")
    if gpus is not None:
        device = "cuda:" + gpus.replace(" ", "")
    try:
        settings = settings_with(device)
    except ValueError as exc:
        raise fail(str(exc)) from None
    overrides = {"host": host, "port": port, "token": token}
    service = settings.service.model_copy(
        update={key: value for key, value in overrides.items() if value is not None}
    )

    def listening(url: str) -> None:
        auth = "a bearer token required" if service.token else "no token: this machine only"
        out.print(f"listening on {url} ({auth})", markup=False)
        out.print(f"use it with: adaexplore-mcp eval TASK KERNEL --judge {url}", markup=False)
        sys.stdout.flush()

    with err.status("starting the judge…") as status:

        def ready(url: str) -> None:
            status.stop()
            listening(url)

        try:
            asyncio.run(serve(settings.judge, service, settings.home, on_listening=ready))
        except JudgeError as exc:
            raise fail(f"the judge could not start: {exc}", EXIT_JUDGE) from None
        except ValueError as exc:
            raise fail(str(exc)) from None
