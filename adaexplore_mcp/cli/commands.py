"""The whole ``adaexplore-mcp`` command line (``cli.main`` is the entry point)."""

import typer

from adaexplore_mcp.cli import judge, rules, tasks
from adaexplore_mcp.cli.adapt import adapt_command
from adaexplore_mcp.cli.demo import demo_command
from adaexplore_mcp.cli.drive import drive_command
from adaexplore_mcp.cli.evaluate import eval_command
from adaexplore_mcp.cli.profile import profile_command
from adaexplore_mcp.cli.reeval import reeval_command
from adaexplore_mcp.cli.report import report_command
from adaexplore_mcp.cli.serve import serve_command
from adaexplore_mcp.cli.stats import stats_command

app = typer.Typer(
    help="Optimize GPU kernels with the AdaExplore method: MCP server, judge and driver.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.command("eval")(eval_command)
app.command("profile")(profile_command)
app.command("serve")(serve_command)
app.command("drive")(drive_command)
app.command("demo")(demo_command)
app.command("stats")(stats_command)
app.command("reeval")(reeval_command)
app.command("report")(report_command)
app.command("adapt")(adapt_command)
app.add_typer(tasks.app, name="tasks")
app.add_typer(judge.app, name="judge")
app.add_typer(rules.app, name="rules")

__all__ = ["app"]
