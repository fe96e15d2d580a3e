"""What every command shares: consoles, exit codes, options and settings. (The judge's lifetime
is in ``judging.py``: `serve` imports this module, and its judge starts on the first tool call.)"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError
from rich.console import Console

from adaexplore_mcp.config import Settings
from adaexplore_mcp.tasks import Task, TaskError, resolve_task

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)

EXIT_USAGE = 2
EXIT_JUDGE = 3

DeviceOption = Annotated[
    str | None,
    typer.Option(
        help="cpu, cuda:N, cuda (every GPU) or auto. Default: ADAEXPLORE_JUDGE__DEVICE or auto."
    ),
]
JudgeUrlOption = Annotated[
    str | None,
    typer.Option(
        "--judge",
        help="The judge to use instead of a local one: the URL of a judge service "
        "(adaexplore-mcp judge serve), 'ray' (the Ray cluster at RAY_ADDRESS, else a new local "
        "one) or ray://HOST:PORT (docs/ray.md). Default: ADAEXPLORE_REMOTE__URL.",
    ),
]
JudgeTokenOption = Annotated[
    str | None,
    typer.Option(
        "--judge-token", help="The judge service's token. Default: ADAEXPLORE_REMOTE__TOKEN."
    ),
]


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}")
    return typer.Exit(code)


def load_settings() -> Settings:
    """The ADAEXPLORE_* settings, or a one-line error naming the variable that is wrong."""
    try:
        return Settings()
    except ValidationError as exc:
        error = exc.errors()[0]
        variable = "ADAEXPLORE_" + "__".join(str(part) for part in error["loc"]).upper()
        raise fail(f"{variable}: {error['msg']}") from None
    except SettingsError as exc:  # a value that should be JSON (a dict, a list) is not
        raise fail(
            f"{exc}: an ADAEXPLORE_JUDGE__* setting that holds several values (TOLERANCES, "
            "say) is written as JSON"
        ) from None


def settings_with(
    device: str | None = None,
    timeout: float | None = None,
    judge_url: str | None = None,
    judge_token: str | None = None,
) -> Settings:
    settings = load_settings()
    updates: dict[str, str | float] = {}
    if device is not None:
        updates["device"] = device
    if timeout is not None:
        updates["timeout_s"] = timeout
    if updates:
        try:
            judge = settings.judge.model_validate({**settings.judge.model_dump(), **updates})
        except ValidationError as exc:
            error = exc.errors()[0]
            raise fail(f"{'.'.join(map(str, error['loc']))}: {error['msg']}") from None
        settings = settings.model_copy(update={"judge": judge})
    remote = {"url": judge_url, "token": judge_token}
    remote = {key: value for key, value in remote.items() if value is not None}
    if remote:
        settings = settings.model_copy(update={"remote": settings.remote.model_copy(update=remote)})
    return settings


def load_task(name_or_path: str) -> Task:
    try:
        return resolve_task(name_or_path)
    except TaskError as exc:
        raise fail(str(exc)) from None


class ProviderChoice(StrEnum):
    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    AZURE = "azure"


ProviderOption = Annotated[
    ProviderChoice | None,
    typer.Option(help="The model's provider. Default: ADAEXPLORE_LLM__PROVIDER."),
]
ModelOption = Annotated[
    str | None, typer.Option(help="The provider's model name. Default: ADAEXPLORE_LLM__MODEL.")
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        help="An OpenAI-compatible server (vLLM: http://host:8000/v1), a gateway or an Azure "
        "endpoint. Default: ADAEXPLORE_LLM__BASE_URL."
    ),
]
