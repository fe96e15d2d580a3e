"""`adaexplore-mcp rules`: read and curate the skill memory."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from adaexplore_mcp.app import open_app
from adaexplore_mcp.cli.common import fail, load_settings, out
from adaexplore_mcp.memory import (
    RulesFileError,
    RuleStatus,
    RuleTextError,
    SkillMemory,
    UnknownRule,
    export_rules,
    import_rules,
)

app = typer.Typer(
    help="Read and curate the rule memory ('You cannot …' rules distilled from failures).",
    no_args_is_help=True,
)

JsonOption = Annotated[bool, typer.Option("--json", help="One JSON object a line.")]
RuleId = Annotated[int, typer.Argument(help="A rule id, as `rules list --all` shows it.")]


def _memory() -> SkillMemory:
    # curating files no failure, so the memory distils nothing and no model is opened
    return open_app(load_settings(), distil=False).memory


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


@app.command("list")
def rules_list(
    all_rules: Annotated[
        bool, typer.Option("--all", help="Candidates and retired rules too.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """The active rules (those injected into prompts), broadest support first."""
    memory = _memory()
    rules = memory.rules(None if all_rules else [RuleStatus.ACTIVE])
    rules.sort(key=lambda r: (r.status is not RuleStatus.ACTIVE, -r.support_tasks, r.id))
    if as_json:
        for rule in rules:
            sys.stdout.write(rule.model_dump_json() + "\n")
        return
    if not rules:
        hint = "" if all_rules else " (--all shows candidates and retired rules)"
        out.print(f"no rules{hint}")
        return
    table = Table(box=None, pad_edge=False)
    for column in ("id", "status", "tasks", "failures", "rule"):
        table.add_column(
            column, justify="right" if column in {"id", "tasks", "failures"} else "left"
        )
    for rule in rules:
        status = rule.status.value + (" (one kernel)" if rule.kernel_specific else "")
        table.add_row(
            str(rule.id), status, str(rule.support_tasks), str(rule.support_failures), rule.text
        )
    out.print(table)
    if not all_rules:
        out.print(
            f"[dim]{len(rules)} active; a rule is active once failures on "
            f"{memory.threshold} tasks support it[/dim]"
        )


@app.command("show")
def rules_show(rule_id: RuleId, as_json: JsonOption = False) -> None:
    """A rule with its provenance and the failures that support it."""
    memory = _memory()
    try:
        rule = memory.rule(rule_id)
    except UnknownRule as exc:
        raise fail(str(exc)) from None
    failures = memory.failures(rule_id=rule_id)
    if as_json:
        sys.stdout.write(
            json.dumps(
                {
                    **rule.model_dump(mode="json"),
                    "failures": [f.model_dump(mode="json") for f in failures],
                }
            )
            + "\n"
        )
        return
    out.print(
        f"[bold]rule {rule.id}[/bold]  {rule.status.value}"
        + ("  (tied to one kernel: never activated)" if rule.kernel_specific else "")
    )
    out.print(rule.text, markup=False)
    out.print(
        f"support: {rule.support_tasks} tasks, {rule.support_failures} failures; "
        f"from: {rule.provenance.value}; first seen {_when(rule.first_seen)}, "
        f"last seen {_when(rule.last_seen)}"
    )
    if rule.tasks:
        out.print("tasks: " + ", ".join(rule.tasks), markup=False)
    if rule.environments:
        out.print("seen with triton/torch/GPU: " + ", ".join(rule.environments), markup=False)
    for failure in failures:
        first_line = failure.error.strip().splitlines()[-1][:110] if failure.error.strip() else ""
        out.print(
            f"  failure {failure.id}  {failure.task}  {failure.error_type}: {first_line}",
            markup=False,
        )


@app.command("add")
def rules_add(
    text: Annotated[str, typer.Argument(help='One sentence starting "You cannot".')],
) -> None:
    """Add a curated rule (active at once), or merge it into the rule it repeats."""
    try:
        rule, created = _memory().add_rule(text)
    except RuleTextError as exc:
        raise fail(str(exc)) from None
    verb = "added" if created else "already there as"
    out.print(f"{verb} rule {rule.id} ({rule.status.value}): {rule.text}", markup=False)


@app.command("retire")
def rules_retire(rule_id: RuleId) -> None:
    """Stop injecting a rule; it keeps its evidence and is never activated again."""
    try:
        rule = _memory().retire(rule_id)
    except UnknownRule as exc:
        raise fail(str(exc)) from None
    out.print(f"retired rule {rule.id}: {rule.text}", markup=False)


@app.command("failures")
def rules_failures(
    rule: Annotated[
        int | None, typer.Option(help="Only the failures supporting this rule.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="Newest first, at most this many.")] = 50,
    as_json: JsonOption = False,
) -> None:
    """Recorded failures, newest first, with the rules they support."""
    try:
        failures = _memory().failures(rule_id=rule, limit=limit)
    except UnknownRule as exc:
        raise fail(str(exc)) from None
    if as_json:
        for failure in failures:
            sys.stdout.write(failure.model_dump_json() + "\n")
        return
    if not failures:
        out.print("no failures recorded")
        return
    table = Table(box=None, pad_edge=False)
    for column in ("id", "task", "error", "signature", "rules", "when"):
        table.add_column(column)
    for failure in failures:
        table.add_row(
            str(failure.id),
            failure.task,
            failure.error_type,
            failure.signature,
            ",".join(map(str, failure.rule_ids)) or "-",
            _when(failure.created_at),
        )
    out.print(table)


@app.command("search")
def rules_search(
    query: Annotated[str | None, typer.Argument(help="Words or a kernel file ('@k.py').")] = None,
    task: Annotated[str | None, typer.Option(help="Rules seen on this task rank higher.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, max=500)] = None,
) -> None:
    """The active rules a prompt would get, most relevant first (what get_rules returns)."""
    if query and query.startswith("@"):
        try:
            query = Path(query[1:]).read_text()
        except OSError as exc:
            raise fail(f"cannot read {query[1:]}: {exc.strerror or exc}") from None
    answer = _memory().get_rules(query, task=task, limit=limit)
    for hit in answer.rules:
        out.print(f"{hit.id:>5}  {hit.score:6.2f}  {hit.text}", markup=False)
    if answer.omitted_for_budget:
        out.print(f"[dim]{answer.omitted_for_budget} more left out by the token budget[/dim]")


@app.command("export")
def rules_export(
    file: Annotated[Path, typer.Argument(help="Where to write; '-' for standard output.")],
) -> None:
    """Write the active and candidate rules, one a line (`rule||support`)."""
    text = export_rules(_memory())
    if str(file) == "-":
        sys.stdout.write(text)
        return
    try:
        file.write_text(text)
    except OSError as exc:
        raise fail(f"cannot write {file}: {exc.strerror or exc}") from None
    out.print(f"wrote {len(text.splitlines())} rules to {file}", markup=False)


@app.command("import")
def rules_import(
    file: Annotated[Path, typer.Argument(help="A rules file; '-' for standard input.")],
) -> None:
    """Add the rules of a file (`rule` or `rule||support` a line), merging repeats.

    A decimal support (AdaExplore's memory writes `rule||34.0`) is rounded to the nearest
    whole number of tasks, halves up."""
    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text()
    except OSError as exc:
        raise fail(f"cannot read {file}: {exc.strerror or exc}") from None
    try:
        report = import_rules(_memory(), text)
    except RulesFileError as exc:
        raise fail(str(exc)) from None
    out.print(f"{len(report.added)} rules added, {len(report.merged)} merged into existing rules")
    if report.tied_to_one_kernel:
        out.print(
            f"{len(report.tied_to_one_kernel)} of them name one kernel's lines or variables and "
            "stay inactive (`rules list --all` shows them)"
        )
