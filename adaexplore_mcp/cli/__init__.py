"""The ``adaexplore-mcp`` command line. Every command is a thin call into the packages.

``main`` is the entry point. ``serve`` is the command an MCP client starts and then waits on
for ``initialize``, so it is built alone, without importing every other command (the driver,
the reports, the judge service's client).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer


def main() -> None:
    if sys.argv[1:2] == ["serve"]:
        _serve_only()()
    else:
        from adaexplore_mcp.cli.commands import app

        app()


def _serve_only() -> typer.Typer:
    import typer

    from adaexplore_mcp.cli.serve import serve_command

    app = typer.Typer(pretty_exceptions_enable=False, add_completion=False)
    app.command("serve")(serve_command)
    app.callback()(lambda: None)  # keeps "serve" a subcommand, as in the whole app
    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        from adaexplore_mcp.cli.commands import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["app", "main"]
