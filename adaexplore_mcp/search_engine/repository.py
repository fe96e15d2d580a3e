"""Every SQL statement of the search engine. Each function works inside the caller's transaction
(``Store.connect()``), so the engine composes them into one atomic unit per step."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from adaexplore_mcp.judge.result import kernel_hash
from adaexplore_mcp.search_engine.models import Action, Budget, Edit, Measurement
from adaexplore_mcp.search_engine.settings import SearchSettings

_LIGHT_COLUMNS = "id, parent_id, action, depth, status, speedup, runtime_ms, author, created_at"


class SearchRecord(BaseModel):
    """A row of ``searches``."""

    id: str
    task_name: str
    task_hash: str
    task: str  # the Task as JSON
    settings: SearchSettings
    budget: Budget
    label: str | None
    seed: int
    forked_from: str | None
    forked_node: int | None
    created_at: float
    steps: int
    evaluations: int
    tokens: int
    active_s: float
    tick_at: float
    selections: int

    def wall_s(self, now: float) -> float:
        return self.active_s + max(0.0, now - self.tick_at)


class NewNode(BaseModel):
    parent_id: int | None
    action: Action
    code: str | None = None
    edits: list[Edit] | None = None
    result_json: str | None = None
    status: str | None = None
    speedup: float | None = None
    runtime_ms: float | None = None
    author: str | None = None
    note: str | None = None
    tokens: int = 0
    copied_from: int | None = None


# -- searches --------------------------------------------------------------------------------


def insert_search(conn: sqlite3.Connection, record: SearchRecord) -> None:
    row = record.model_dump()
    row["settings"] = record.settings.model_dump_json()
    row["budget"] = record.budget.model_dump_json()
    columns = ", ".join(row)
    marks = ", ".join(f":{name}" for name in row)
    conn.execute(f"INSERT INTO searches ({columns}) VALUES ({marks})", row)


def get_search(conn: sqlite3.Connection, search_id: str) -> SearchRecord | None:
    row = conn.execute("SELECT * FROM searches WHERE id = ?", (search_id,)).fetchone()
    return _search(row) if row is not None else None


def list_searches(
    conn: sqlite3.Connection, task: str | None, limit: int | None, offset: int = 0
) -> list[SearchRecord]:
    query = "SELECT * FROM searches"
    args: list[object] = []
    if task is not None:
        query += " WHERE task_name = ?"
        args.append(task)
    query += " ORDER BY created_at DESC, id"
    query += " LIMIT ? OFFSET ?"
    args += [-1 if limit is None else limit, offset]
    return [_search(row) for row in conn.execute(query, args)]


def recent_search_ids(conn: sqlite3.Connection, limit: int = 5) -> list[str]:
    rows = conn.execute("SELECT id FROM searches ORDER BY created_at DESC LIMIT ?", (limit,))
    return [row["id"] for row in rows]


def _search(row: sqlite3.Row) -> SearchRecord:
    values = dict(row)
    values["settings"] = SearchSettings.model_validate_json(values["settings"])
    values["budget"] = Budget.model_validate_json(values["budget"])
    return SearchRecord(**values)


def add_usage(
    conn: sqlite3.Connection,
    search_id: str,
    now: float,
    *,
    steps: int = 0,
    evaluations: int = 0,
    tokens: int = 0,
    selections: int = 0,
) -> None:
    """Count usage and advance the wall clock to ``now``."""
    conn.execute(
        "UPDATE searches SET steps = steps + ?, evaluations = evaluations + ?, "
        "tokens = tokens + ?, selections = selections + ?, "
        "active_s = active_s + MAX(0, ? - tick_at), tick_at = MAX(tick_at, ?) WHERE id = ?",
        (steps, evaluations, tokens, selections, now, now, search_id),
    )


def restart_clock(conn: sqlite3.Connection, search_id: str, now: float) -> None:
    """The time since the last recorded activity (a crash, a stop) does not count."""
    conn.execute("UPDATE searches SET tick_at = ? WHERE id = ?", (now, search_id))


# -- nodes -----------------------------------------------------------------------------------


def insert_node(conn: sqlite3.Connection, search_id: str, node: NewNode, now: float) -> int:
    """Append a node: the next id of its search. Its reward and its ancestors' statistics are
    not stored (they move with the search's best); the tree derives them."""
    next_id = conn.execute(
        "SELECT COALESCE(MAX(id), -1) + 1 FROM search_nodes WHERE search_id = ?", (search_id,)
    ).fetchone()[0]
    depth = 0
    if node.parent_id is not None:
        depth = (
            conn.execute(
                "SELECT depth FROM search_nodes WHERE search_id = ? AND id = ?",
                (search_id, node.parent_id),
            ).fetchone()[0]
            + 1
        )
    insert_node_row(conn, search_id, next_id, node, depth=depth, created_at=now)
    return next_id


def insert_node_row(
    conn: sqlite3.Connection,
    search_id: str,
    node_id: int,
    node: NewNode,
    *,
    depth: int,
    created_at: float,
) -> None:
    """One node row. The columns reward, visits and value_sum of earlier versions are left
    empty: those numbers are derived (``tree.Tree``)."""
    edits = json.dumps([e.model_dump() for e in node.edits]) if node.edits is not None else None
    code_hash = kernel_hash(node.code) if node.code is not None else None
    conn.execute(
        "INSERT INTO search_nodes (search_id, id, parent_id, action, depth, code, code_hash, "
        "edits, result, status, speedup, runtime_ms, author, note, tokens, copied_from, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            search_id,
            node_id,
            node.parent_id,
            node.action.value,
            depth,
            node.code,
            code_hash,
            edits,
            node.result_json,
            node.status,
            node.speedup,
            node.runtime_ms,
            node.author,
            node.note,
            node.tokens,
            node.copied_from,
            created_at,
        ),
    )


def nodes_after(conn: sqlite3.Connection, search_id: str, after_id: int) -> list[sqlite3.Row]:
    """Nodes without code or result, newer than ``after_id``, in id order."""
    return conn.execute(
        f"SELECT {_LIGHT_COLUMNS} FROM search_nodes WHERE search_id = ? AND id > ? ORDER BY id",
        (search_id, after_id),
    ).fetchall()


def full_nodes(
    conn: sqlite3.Connection, search_id: str, node_ids: Sequence[int] | None = None
) -> dict[int, sqlite3.Row]:
    """Whole rows (code, edits and result included) by id; every node when ``node_ids`` is None."""
    if node_ids is None:
        rows = conn.execute(
            "SELECT * FROM search_nodes WHERE search_id = ? ORDER BY id", (search_id,)
        )
    else:
        marks = ", ".join("?" * len(node_ids))
        rows = conn.execute(
            f"SELECT * FROM search_nodes WHERE search_id = ? AND id IN ({marks})",
            (search_id, *node_ids),
        )
    return {row["id"]: row for row in rows}


def node_with_code(conn: sqlite3.Connection, search_id: str, code: str) -> int | None:
    """The first node of the search, under any parent, holding exactly ``code``."""
    rows = conn.execute(
        "SELECT id, code FROM search_nodes WHERE search_id = ? AND code_hash = ? ORDER BY id",
        (search_id, kernel_hash(code)),
    ).fetchall()
    return next((row["id"] for row in rows if row["code"] == code), None)


def codes(conn: sqlite3.Connection, search_id: str, node_ids: Sequence[int]) -> dict[int, str]:
    marks = ", ".join("?" * len(node_ids))
    rows = conn.execute(
        f"SELECT id, code FROM search_nodes WHERE search_id = ? AND id IN ({marks})",
        (search_id, *node_ids),
    )
    return {row["id"]: row["code"] for row in rows if row["code"] is not None}


def copy_of(conn: sqlite3.Connection, search_id: str, original_id: int) -> int:
    row = conn.execute(
        "SELECT id FROM search_nodes WHERE search_id = ? AND copied_from = ?",
        (search_id, original_id),
    ).fetchone()
    return row["id"]


# -- measurements ----------------------------------------------------------------------------


def insert_measurement(conn: sqlite3.Connection, search_id: str, measurement: Measurement) -> None:
    conn.execute(
        "INSERT INTO search_measurements (search_id, node_id, status, runtime_ms, speedup, "
        "device, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            search_id,
            measurement.node_id,
            measurement.status.value,
            measurement.runtime_ms,
            measurement.speedup,
            measurement.device,
            measurement.created_at,
        ),
    )


def measurements_after(
    conn: sqlite3.Connection, search_id: str, after_id: int
) -> list[sqlite3.Row]:
    """Re-measurements newer than ``after_id`` (a row id), oldest first."""
    return conn.execute(
        "SELECT id, node_id, status, runtime_ms FROM search_measurements "
        "WHERE search_id = ? AND id > ? ORDER BY id",
        (search_id, after_id),
    ).fetchall()


def measurements(
    conn: sqlite3.Connection, search_id: str, node_ids: Iterable[int] | None = None
) -> list[Measurement]:
    rows = conn.execute(
        "SELECT node_id, status, runtime_ms, speedup, device, created_at "
        "FROM search_measurements WHERE search_id = ? ORDER BY id",
        (search_id,),
    )
    wanted = set(node_ids) if node_ids is not None else None
    return [Measurement(**dict(row)) for row in rows if wanted is None or row["node_id"] in wanted]
