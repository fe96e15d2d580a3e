"""The live table of a run (on standard error) and the summary printed at its end."""

from __future__ import annotations

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from adaexplore_mcp.driver.progress import RunProgress


def _tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 10_000 else str(count)


def _cost(cost: float | None) -> str:
    return "-" if cost is None else f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def progress_table(progress: RunProgress, *, title: str | None = None) -> Table:
    config = progress.config
    label = "replay (scripted transcript)" if config.replay else config.model
    table = Table(
        title=title or f"{config.strategy} · memory {config.memory} · {label}",
        title_justify="left",
        expand=False,
    )
    table.add_column("task")
    table.add_column("steps", justify="right")
    table.add_column("best (eager / compile)")
    table.add_column("last step")
    table.add_column("tokens", justify="right")
    table.add_column("cost", justify="right")
    done = planned = 0
    for row in progress.tasks:
        done += row.done
        planned += row.steps
        running = f" (+{row.running})" if row.running else ""
        table.add_row(
            row.task,
            f"{row.done}/{row.steps}{running}",
            row.best,
            row.last or "-",
            _tokens(row.input_tokens + row.output_tokens),
            _cost(row.cost_usd),
        )
    usage = progress.usage
    table.add_section()
    table.add_row(
        Text("total", style="bold"),
        f"{done}/{planned}",
        f"{sum(1 for row in progress.tasks if row.best != '-')} of {len(progress.tasks)} solved",
        f"{usage.calls} calls, {usage.retries} retries",
        _tokens(usage.input_tokens + usage.output_tokens),
        _cost(usage.cost_usd),
    )
    return table


class LiveDisplay:
    """An ``Observer`` that redraws the table whenever a step starts or ends."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._live: Live | None = None
        self.last: RunProgress | None = None

    def __enter__(self) -> LiveDisplay:
        self._live = Live(
            Text("starting…"), console=self._console, refresh_per_second=4, transient=True
        )
        self._live.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None

    def update(self, progress: RunProgress) -> None:
        self.last = progress
        if self._live is not None:
            caption = Text(f"run directory: {progress.run_dir}", style="dim")
            self._live.update(Group(progress_table(progress), caption))


class QuietObserver:
    """Keeps the last progress for the final summary, draws nothing."""

    def __init__(self) -> None:
        self.last: RunProgress | None = None

    def update(self, progress: RunProgress) -> None:
        self.last = progress
