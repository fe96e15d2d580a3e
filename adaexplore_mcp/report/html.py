"""The HTML report: one self-contained file (inline CSS, SVG and a few lines of JavaScript; no
network) with the search tree, the best speedup over steps, the best kernel and its diff to
its parent, the rules in play and the run's metadata and statistics.

Everything that comes from a run, a task, a kernel or the memory is escaped by Jinja's
autoescape; the nodes' details travel as JSON in a ``<script type="application/json">`` block
with ``<``, ``>`` and ``&`` written as ``\\u`` escapes, and the page fills them in with
``textContent``, never as HTML.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import re
import time
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Literal

import jinja2
from markupsafe import Markup
from pydantic import BaseModel, Field

from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.memory import RuleStatus, SkillMemory
from adaexplore_mcp.report.chart import Chart, chart
from adaexplore_mcp.report.stats import RunStats, TaskStats, run_stats, task_stats
from adaexplore_mcp.report.tree import (
    STATUS_COLOURS,
    ReportNode,
    TreeDrawing,
    draw,
    nodes_from_events,
    nodes_from_export,
)
from adaexplore_mcp.rundir import RunConfig, RunData, TaskRun, TaskRunSummary, write_text
from adaexplore_mcp.search_engine import SearchEngine, SearchExport, UnknownSearch
from adaexplore_mcp.store import Store

RULES_SHOWN = 40


class DiffLine(BaseModel):
    kind: Literal["meta", "hunk", "add", "del", "ctx"]
    text: str


class BestView(BaseModel):
    node_id: int | None
    code: str
    parent_id: int | None
    parent_is_root: bool = Field(description="A first kernel: nothing to diff against.")
    diff: list[DiffLine]
    speedup: float | None
    runtime_ms: float | None


class TaskSection(BaseModel):
    anchor: str
    name: str
    search_id: str | None
    summary: TaskRunSummary | None
    stats: TaskStats | None
    tree: TreeDrawing | None
    chart: Chart | None
    best: BestView | None
    notes: list[str]
    rules_in_prompt: float | None = Field(description="Mean rules per step's prompt.")


class RuleView(BaseModel):
    id: int
    text: str
    support_tasks: int
    support_failures: int
    provenance: str
    learned_in_run: bool


class Report(BaseModel):
    title: str
    kind: Literal["run", "search"]
    generated_at: float
    version: str
    run: RunConfig | None
    run_path: str | None
    precision: Precision
    legacy: bool
    ops: Ops = Ops.TRITON
    speedup_baseline: str
    stats: RunStats | None
    tasks: list[TaskSection]
    rules: list[RuleView]
    rules_note: str
    colours: dict[str, str] = Field(default_factory=lambda: dict(STATUS_COLOURS))


def report_for_run(run: RunData, store: Store | None) -> Report:
    engine = SearchEngine(store) if store is not None else None
    sections = [
        _run_task(index, task, engine, run.precision) for index, task in enumerate(run.tasks)
    ]
    times = [e.finished_at for t in run.tasks for e in t.events]
    end = max(times, default=time.time())
    rules, note = _rules(store, run.config.started_at, end, run.config.memory)
    return Report(
        title=f"Run {run.path.name}",
        kind="run",
        generated_at=time.time(),
        version=_version(),
        run=run.config,
        run_path=str(run.path),
        precision=run.precision,
        legacy=run.precision is Precision.LEGACY,
        ops=run.ops,
        speedup_baseline="eager",
        stats=run_stats([run]),
        tasks=sections,
        rules=rules,
        rules_note=note,
    )


def report_for_search(search_id: str, store: Store) -> Report:
    """Raises ``UnknownSearch`` (which lists recent ids) for an unknown id."""
    engine = SearchEngine(store)
    export = engine.export(search_id)
    info = export.search
    nodes = nodes_from_export(export)
    best_id = _best_of_search(engine, export)
    outcomes = [(n.status == "correct", n.speedup) for n in nodes if n.status != "root"]
    section = TaskSection(
        anchor="task-0",
        name=info.task,
        search_id=info.id,
        summary=None,
        stats=None,
        tree=draw(nodes, "store", best_id),
        chart=chart(outcomes, info.settings.speedup_baseline),
        best=_best_view(nodes, best_id, None),
        notes=[f"{info.node_count - 1} kernels, {info.correct_count} correct"]
        + ([f"budget spent: {info.exhausted}"] if info.exhausted else []),
        rules_in_prompt=None,
    )
    rules, note = _rules(store, info.created_at, time.time(), None)
    return Report(
        title=f"Search {info.id} on {info.task}",
        kind="search",
        generated_at=time.time(),
        version=_version(),
        run=None,
        run_path=None,
        precision=info.settings.precision,
        legacy=info.settings.precision is Precision.LEGACY,
        ops=info.settings.ops,
        speedup_baseline=info.settings.speedup_baseline,
        stats=None,
        tasks=[section],
        rules=rules,
        rules_note=note,
    )


def render_report(report: Report) -> str:
    template = _environment().get_template("report.html.j2")
    return template.render(report=report, json_for=json_for, node_data=node_data)


def write_report(report: Report, path: Path) -> Path:
    write_text(path, render_report(report))
    path.chmod(0o644)  # a page to share, not a private temporary file
    return path


def json_for(data: object) -> Markup:
    """JSON that is safe inside a <script> element: no '<', '>' or '&' survives literally."""
    text = json.dumps(data, ensure_ascii=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def node_data(tree: TreeDrawing) -> dict[str, dict]:
    """What the page shows when a node is clicked, by node id."""
    fields = {"id", "parent_id", "action", "status", "speedup", "runtime_ms", "reward"}
    return {
        str(node.id): node.model_dump(include=fields | {"message", "code", "step"})
        for node in tree.nodes
    }


def unified_diff(before: str, after: str, before_name: str, after_name: str) -> list[DiffLine]:
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), before_name, after_name, lineterm="", n=3
    )
    out = []
    kind: Literal["meta", "hunk", "add", "del", "ctx"]
    for line in lines:
        if line.startswith(("---", "+++")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append(DiffLine(kind=kind, text=line))
    return out


# -- internals ---------------------------------------------------------------------------------


def _run_task(
    index: int, task: TaskRun, engine: SearchEngine | None, precision: Precision
) -> TaskSection:
    notes = []
    search_id = task.record.search_id if task.record else None
    export = _export(engine, search_id) if search_id else None
    if export is not None:
        nodes, source = nodes_from_export(export), "store"
    else:
        nodes, source = nodes_from_events(task), "events"
        if search_id:
            notes.append(
                f"search {search_id} is not in the store of ADAEXPLORE_HOME (set it to the home "
                "the run used for every node's verdict); the tree is drawn from events.jsonl"
            )
    summary = task.summary
    if summary is None:
        notes.append("no summary.json: the task did not finish")
    elif summary.precision is not precision:
        notes.append(f"this task's summary says precision {summary.precision.value}")
    best_id = summary.best_node_id if summary and summary.correct else None
    tree = draw(nodes, source, best_id) if len(nodes) > 1 else None
    outcomes = [(e.outcome == "correct", e.speedup_eager) for e in task.events]
    best = _best_view(nodes, best_id, task.best_kernel() if summary and summary.correct else None)
    if best is not None and summary is not None:
        best.speedup, best.runtime_ms = summary.speedup_eager, summary.best_runtime_ms
    prompts = [e.rules_in_prompt for e in task.events]
    return TaskSection(
        anchor=f"task-{index}",
        name=task.name,
        search_id=search_id,
        summary=summary,
        stats=task_stats(task),
        tree=tree,
        chart=chart(outcomes) if outcomes else None,
        best=best,
        notes=notes,
        rules_in_prompt=sum(prompts) / len(prompts) if prompts else None,
    )


def _export(engine: SearchEngine | None, search_id: str) -> SearchExport | None:
    if engine is None:
        return None
    try:
        return engine.export(search_id)
    except UnknownSearch:
        return None


def _best_of_search(engine: SearchEngine, export: SearchExport) -> int | None:
    """The engine's own choice (median over re-measurements); the highest reward when called
    from inside an event loop, where the async reader cannot be waited for."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        best = asyncio.run(engine.best_kernel(export.search.id))
        return best.node.id if best.node is not None else None
    return export.search.best.id if export.search.best is not None else None


def _best_view(nodes: list[ReportNode], best_id: int | None, code: str | None) -> BestView | None:
    by_id = {node.id: node for node in nodes}
    node = by_id.get(best_id) if best_id is not None else None
    code = code or (node.code if node else None)
    if code is None:
        return None
    parent = by_id.get(node.parent_id) if node and node.parent_id is not None else None
    parent_is_root = parent is None or parent.status == "root"
    diff = []
    if not parent_is_root and parent is not None and parent.code is not None:
        diff = unified_diff(parent.code, code, f"node {parent.id}", f"node {best_id}")
    return BestView(
        node_id=best_id,
        code=code,
        parent_id=parent.id if parent else None,
        parent_is_root=parent_is_root,
        diff=diff,
        speedup=node.speedup if node else None,
        runtime_ms=node.runtime_ms if node else None,
    )


def _rules(
    store: Store | None, since: float, until: float, memory_mode: str | None
) -> tuple[list[RuleView], str]:
    if store is None:
        return [], "No store under ADAEXPLORE_HOME, so no rules could be read."
    # read-only: a report installs no starter memory (that is the composition root's part)
    memory = SkillMemory(store)
    active = sorted(
        memory.rules([RuleStatus.ACTIVE]), key=lambda r: (-r.support_tasks, -r.last_seen, r.id)
    )
    views = [
        RuleView(
            id=rule.id,
            text=rule.text,
            support_tasks=rule.support_tasks,
            support_failures=rule.support_failures,
            provenance=rule.provenance.value,
            learned_in_run=since <= rule.first_seen <= until + 1,
        )
        for rule in active[:RULES_SHOWN]
    ]
    learned = sum(1 for rule in active if since <= rule.first_seen <= until + 1)
    note = (
        f"{len(active)} rules are active in the memory now ({learned} first seen during this "
        f"{'run' if memory_mode is not None else 'search'})"
    )
    if len(active) > RULES_SHOWN:
        note += f"; the {RULES_SHOWN} with the broadest support are shown"
    if memory_mode == "none":
        note += ". This run used no memory: its prompts had no rules"
    elif memory_mode == "reasoning-bank":
        note += ". This run used the reasoning bank, not these rules, in its prompts"
    return views, note + "."


def _version() -> str:
    try:
        return version("adaexplore-mcp")
    except PackageNotFoundError:
        return "unknown"


@cache
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("adaexplore_mcp", "report/templates"),
        autoescape=True,  # every value from a run, a kernel or the memory is text, never markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["when"] = lambda t: time.strftime("%Y-%m-%d %H:%M", time.localtime(t))
    environment.filters["num"] = _num
    environment.filters["slug"] = lambda text: re.sub(r"[^a-z0-9_-]+", "-", str(text).lower())
    return environment


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}g}"
