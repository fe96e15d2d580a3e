"""Stored rows into the models callers see, and the judge's verdict condensed into feedback."""

from __future__ import annotations

import json
import sqlite3

from adaexplore_mcp.judge import speed_of_light_line
from adaexplore_mcp.judge.result import EvalResult, Status
from adaexplore_mcp.search_engine import budget, leases
from adaexplore_mcp.search_engine import repository as repo
from adaexplore_mcp.search_engine.models import (
    Edit,
    ForkOrigin,
    MemoryEntry,
    NodeView,
    PoolEntry,
    SearchInfo,
)
from adaexplore_mcp.search_engine.repository import SearchRecord
from adaexplore_mcp.search_engine.tree import Tree, TreeNode

_FEEDBACK_LIMIT = 2000
# A working-memory entry keeps what the agent learned at the step without letting one chatty
# step crowd out the chain: the head of its note (the intent comes first) and the last lines
# of what its kernel printed (timings and summaries come last).
NOTE_LIMIT = 600
OUTPUT_LIMIT = 600


def node_view(row: sqlite3.Row, node: TreeNode) -> NodeView:
    summary = node.summary()
    return NodeView(
        **summary.model_dump(),
        code=row["code"],
        edits=_edits(row["edits"]),
        note=row["note"],
        tokens=row["tokens"],
        copied_from=row["copied_from"],
        result=EvalResult.model_validate_json(row["result"]) if row["result"] else None,
    )


def memory_entry(row: sqlite3.Row, node: TreeNode) -> MemoryEntry:
    result = EvalResult.model_validate_json(row["result"])
    return MemoryEntry(
        node_id=node.id,
        action=node.action,
        edits=_edits(row["edits"]),
        status=result.status,
        speedup=node.speedup,
        reward=node.reward or 0.0,
        feedback=feedback(result, node.speedup),
        note=trimmed_note(row["note"]),
        output_tail=trimmed_output(result.output_tail),
    )


def trimmed_note(note: str | None) -> str | None:
    """The note's head, cut at a word where it is longer than ``NOTE_LIMIT``."""
    if note is None or not note.strip():
        return None
    note = note.strip()
    if len(note) <= NOTE_LIMIT:
        return note
    head = note[: NOTE_LIMIT - 1]
    cut = head.rfind(" ")
    return (head[:cut] if cut > NOTE_LIMIT // 2 else head).rstrip() + "…"


def trimmed_output(output: str | None) -> str | None:
    """The last whole lines of what a kernel printed, within ``OUTPUT_LIMIT`` characters; a
    report printed on every call of forward is shown once, with how often it repeated."""
    if output is None or not output.strip():
        return None
    output = _collapsed(output.strip("\n"))
    if len(output) <= OUTPUT_LIMIT:
        return output
    tail = output[-(OUTPUT_LIMIT - 1) :]
    newline = tail.find("\n")
    if 0 <= newline < len(tail) - 1:  # start at a line, unless the last line alone is too long
        tail = tail[newline + 1 :]
    return "…" + tail


def pool_entry(row: sqlite3.Row, node: TreeNode, max_similarity: float) -> PoolEntry:
    return PoolEntry(
        node_id=node.id,
        code=row["code"],
        speedup=node.speedup,
        runtime_ms=node.runtime_ms,
        reward=node.reward or 0.0,
        max_similarity=round(max_similarity, 4),
    )


def feedback(result: EvalResult, speedup: float | None) -> str:
    """What a model needs to learn from a verdict, in a few lines."""
    if result.status is Status.CORRECT:
        head = (
            f"correct, {speedup:.3g}x the baseline"
            if speedup is not None
            else "correct (timing not meaningful here)"
        )
        if result.runtime is not None and result.timing_meaningful:
            head += f", {result.runtime.median_ms:.4g} ms"
        limits = speed_of_light_line(result, launches=True)
        if limits:
            head += f"\n{limits}"
    else:
        head = result.status.value.replace("_", " ")
    parts = [head, result.message]
    error = result.error
    if error is not None:
        where = f" at {error.location}" if error.location else ""
        parts.append(f"{error.type}{where}: {error.message}")
    for flag in result.integrity:
        parts.append(f"integrity check {flag.check}: {flag.detail}")
    text = "\n".join(part for part in parts if part)
    return text if len(text) <= _FEEDBACK_LIMIT else text[: _FEEDBACK_LIMIT - 3] + "..."


_PERIOD_LINES = 16  # the longest block of lines told apart as repeating


def _collapsed(output: str) -> str:
    """``output`` with the block of lines that ends it repeated several times kept once. The
    judge calls forward many times, so a kernel's own timing report comes again and again."""
    lines = output.split("\n")
    for period in range(1, min(_PERIOD_LINES, len(lines) // 2) + 1):
        block = lines[-period:]
        repeats = 1
        while lines[-period * (repeats + 1) : len(lines) - period * repeats] == block:
            repeats += 1
        if repeats > 1:
            rest = lines[: len(lines) - period * repeats]
            what = "line" if period == 1 else f"{period} lines"
            return "\n".join([*rest, *block, f"[the {what} above printed {repeats} times]"])
    return output


def _edits(raw: str | None) -> list[Edit] | None:
    return [Edit(**item) for item in json.loads(raw)] if raw else None


def search_info(
    conn: sqlite3.Connection, record: SearchRecord, tree: Tree, now: float
) -> SearchInfo:
    forked = None
    if record.forked_from is not None and record.forked_node is not None:
        forked = ForkOrigin(
            search_id=record.forked_from,
            node_id=record.forked_node,
            copied_as=repo.copy_of(conn, record.id, record.forked_node),
        )
    spent = budget.exhausted(record, 0, now)
    in_flight = len(leases.active(conn, record.id, now))
    return SearchInfo(
        id=record.id,
        task=record.task_name,
        task_hash=record.task_hash,
        label=record.label,
        created_at=record.created_at,
        root=tree[0].summary(),
        node_count=len(tree.nodes),
        correct_count=tree.correct_count,
        best=tree[tree.best_id].summary() if tree.best_id is not None else None,
        budget=record.budget,
        usage=budget.usage(record, in_flight, now),
        exhausted=spent[0] if spent else None,
        forked_from=forked,
        settings=record.settings,
    )
