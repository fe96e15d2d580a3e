"""The memory's SQL. Every function takes an open connection, so callers decide what one
transaction holds (``Store.connect`` begins it IMMEDIATE: check-then-write is atomic across
processes)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable

from adaexplore_mcp.memory.context import ANY, MemoryContext, failure_context
from adaexplore_mcp.memory.models import Failure, FailureReport, Provenance, Rule, RuleStatus

_RULE_COLUMNS = """
    r.id, r.text, r.status, r.kernel_specific, r.imported_support, r.provenance,
    r.first_seen, r.last_seen, r.precision, r.ops, r.gpu_arch,
    COUNT(f.id) AS support_failures,
    COUNT(DISTINCT f.task) AS linked_tasks,
    json_group_array(DISTINCT f.task) FILTER (WHERE f.task IS NOT NULL) AS tasks,
    json_group_array(DISTINCT coalesce(f.triton, '?') || '/' || coalesce(f.torch, '?') || '/'
                     || coalesce(f.gpu_arch, '?')) FILTER (WHERE f.id IS NOT NULL) AS environments
"""
_RULE_FROM = """
    FROM rules r
    LEFT JOIN rule_failures rf ON rf.rule_id = r.id
    LEFT JOIN failures f ON f.id = rf.failure_id
"""


def touch(conn: sqlite3.Connection, rule_ids: Iterable[int]) -> int:
    """Records that these rules changed: the memory's generation goes up by one and becomes the
    rules' revision, so a reader that cached rules reloads exactly the changed ones."""
    conn.execute(
        "UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
    )
    current = generation(conn)
    ids = list(rule_ids)
    if ids:
        conn.execute(
            f"UPDATE rules SET revision = ? WHERE id IN ({', '.join('?' * len(ids))})",
            [current, *ids],
        )
    return current


def generation(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT value FROM memory_meta WHERE key = 'generation'").fetchone()[0])


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO memory_meta VALUES (?, ?)", (key, value))


# -- failures ---------------------------------------------------------------------------------


def insert_failure(
    conn: sqlite3.Connection,
    report: FailureReport,
    *,
    code_hash: str,
    signature: str,
    error_type: str,
) -> tuple[int, bool]:
    """The failure's id, and whether the same kernel had already failed this way on this task."""
    row = conn.execute(
        "SELECT id FROM failures WHERE task = ? AND code_hash = ? AND signature = ?",
        (report.task, code_hash, signature),
    ).fetchone()
    if row is not None:
        return row[0], True
    cursor = conn.execute(
        "INSERT INTO failures (task, code_hash, code, signature, error_type, error, torch, "
        "triton, gpu_arch, verdict, precision, ops, origin, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            report.task,
            code_hash,
            report.code,
            signature,
            error_type,
            report.error,
            report.torch,
            report.triton,
            report.gpu_arch,
            report.verdict,
            report.precision,
            report.ops,
            report.origin,
            time.time(),
        ),
    )
    assert cursor.lastrowid is not None  # set by every INSERT
    return cursor.lastrowid, False


def failure_code(conn: sqlite3.Connection, failure_id: int) -> str | None:
    row = conn.execute("SELECT code FROM failures WHERE id = ?", (failure_id,)).fetchone()
    return None if row is None else row[0]


def rules_of_failure(conn: sqlite3.Connection, failure_id: int) -> list[int]:
    rows = conn.execute(
        "SELECT rule_id FROM rule_failures WHERE failure_id = ? ORDER BY rule_id", (failure_id,)
    )
    return [r[0] for r in rows]


def cluster(conn: sqlite3.Connection, signature: str, limit: int = 5) -> list[sqlite3.Row]:
    """Failures with one signature, one per task first, newest first."""
    return conn.execute(
        "SELECT * FROM failures WHERE signature = ? GROUP BY task ORDER BY max(created_at) DESC "
        "LIMIT ?",
        (signature, limit),
    ).fetchall()


def rule_of_signature(conn: sqlite3.Connection, signature: str) -> int | None:
    """The rule most failures of this signature already support."""
    row = conn.execute(
        "SELECT rf.rule_id FROM rule_failures rf JOIN failures f ON f.id = rf.failure_id "
        "WHERE f.signature = ? GROUP BY rf.rule_id ORDER BY COUNT(*) DESC, rf.rule_id LIMIT 1",
        (signature,),
    ).fetchone()
    return None if row is None else row[0]


def unlinked_failures(conn: sqlite3.Connection, signature: str) -> list[int]:
    rows = conn.execute(
        "SELECT id FROM failures WHERE signature = ? AND id NOT IN "
        "(SELECT failure_id FROM rule_failures)",
        (signature,),
    ).fetchall()
    return [r[0] for r in rows]


def list_failures(
    conn: sqlite3.Connection, *, rule_id: int | None = None, limit: int | None = None
) -> list[Failure]:
    where, params = (
        ("", [])
        if rule_id is None
        else (
            "WHERE f.id IN (SELECT failure_id FROM rule_failures WHERE rule_id = ?)",
            [rule_id],
        )
    )
    sql = (
        "SELECT f.*, json_group_array(rf.rule_id) FILTER (WHERE rf.rule_id IS NOT NULL) AS rules "
        f"FROM failures f LEFT JOIN rule_failures rf ON rf.failure_id = f.id {where} "
        "GROUP BY f.id ORDER BY f.created_at DESC, f.id DESC"
    )
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [
        Failure(
            **{k: row[k] for k in row.keys() if k not in {"code", "rules"}},  # noqa: SIM118
            rule_ids=json.loads(row["rules"] or "[]"),
        )
        for row in conn.execute(sql, params)
    ]


# -- rules ------------------------------------------------------------------------------------


def insert_rule(
    conn: sqlite3.Connection,
    *,
    text: str,
    normalized: str,
    status: RuleStatus,
    provenance: Provenance,
    kernel_specific: bool,
    imported_support: int = 0,
    context: MemoryContext = ANY,
) -> int:
    now = time.time()
    cursor = conn.execute(
        "INSERT INTO rules (text, normalized, status, kernel_specific, imported_support, "
        "provenance, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (text, normalized, status, int(kernel_specific), imported_support, provenance, now, now),
    )
    rule_id = cursor.lastrowid
    assert rule_id is not None  # set by every INSERT
    set_context(conn, rule_id, context)
    return rule_id


def set_context(conn: sqlite3.Connection, rule_id: int, context: MemoryContext) -> None:
    conn.execute(
        "UPDATE rules SET precision = ?, ops = ?, gpu_arch = ? WHERE id = ?",
        (context.precision, context.ops, context.gpu_arch, rule_id),
    )


def rule_context(conn: sqlite3.Connection, rule_id: int) -> MemoryContext:
    row = conn.execute(
        "SELECT precision, ops, gpu_arch FROM rules WHERE id = ?", (rule_id,)
    ).fetchone()
    return _context(row)


def _context(row: sqlite3.Row) -> MemoryContext:
    return MemoryContext(precision=row["precision"], ops=row["ops"], gpu_arch=row["gpu_arch"])


def rule_by_normalized(conn: sqlite3.Connection, normalized: str) -> int | None:
    row = conn.execute("SELECT id FROM rules WHERE normalized = ?", (normalized,)).fetchone()
    return None if row is None else row[0]


def rule_texts(conn: sqlite3.Connection) -> list[tuple[int, str, str]]:
    """(id, text, status) of every rule, for the dedup prefilter."""
    return [tuple(r) for r in conn.execute("SELECT id, text, status FROM rules ORDER BY id")]


def link(conn: sqlite3.Connection, rule_id: int, failure_ids: Iterable[int]) -> int:
    """Links failures to a rule; returns how many links are new. A newly linked failure
    learned under another policy or GPU widens the rule's context to what holds for both."""
    now = time.time()
    added = 0
    context = rule_context(conn, rule_id)
    for failure_id in failure_ids:
        cursor = conn.execute(
            "INSERT OR IGNORE INTO rule_failures VALUES (?, ?, ?)", (rule_id, failure_id, now)
        )
        if cursor.rowcount:
            added += 1
            context = context.widened(_failure_context(conn, failure_id))
    if added:
        conn.execute("UPDATE rules SET last_seen = ? WHERE id = ?", (now, rule_id))
        set_context(conn, rule_id, context)
    return added


def _failure_context(conn: sqlite3.Connection, failure_id: int) -> MemoryContext:
    row = conn.execute(
        "SELECT verdict, precision, ops, gpu_arch FROM failures WHERE id = ?", (failure_id,)
    ).fetchone()
    return failure_context(row["verdict"], row["precision"], row["ops"], row["gpu_arch"])


def raise_support(conn: sqlite3.Connection, rule_id: int, support: int) -> None:
    """Raises a rule's support to ``support`` distinct tasks (never lowers it): the tasks its
    own failures cover count towards the figure."""
    conn.execute(
        "UPDATE rules SET last_seen = ?, imported_support = max(imported_support, ? - ("
        "  SELECT COUNT(DISTINCT f.task) FROM rule_failures rf JOIN failures f"
        "  ON f.id = rf.failure_id WHERE rf.rule_id = rules.id)) WHERE id = ?",
        (time.time(), support, rule_id),
    )


def set_status(conn: sqlite3.Connection, rule_id: int, status: RuleStatus) -> None:
    conn.execute("UPDATE rules SET status = ? WHERE id = ?", (status, rule_id))


def promote_if_supported(conn: sqlite3.Connection, rule_id: int, threshold: int) -> bool:
    """Activates a candidate whose support reached ``threshold``; True when it did."""
    rule = get_rule(conn, rule_id)
    if (
        rule is None
        or rule.status is not RuleStatus.CANDIDATE
        or rule.kernel_specific
        or rule.support_tasks < threshold
    ):
        return False
    set_status(conn, rule_id, RuleStatus.ACTIVE)
    return True


def get_rule(conn: sqlite3.Connection, rule_id: int) -> Rule | None:
    row = conn.execute(
        f"SELECT {_RULE_COLUMNS} {_RULE_FROM} WHERE r.id = ? GROUP BY r.id", (rule_id,)
    ).fetchone()
    return None if row is None else _rule(row)


def list_rules(
    conn: sqlite3.Connection, statuses: Iterable[RuleStatus] | None = None
) -> list[Rule]:
    where, params = "", []
    if statuses is not None:
        chosen = list(statuses)
        where = f"WHERE r.status IN ({', '.join('?' * len(chosen))})"
        params = [s.value for s in chosen]
    rows = conn.execute(
        f"SELECT {_RULE_COLUMNS} {_RULE_FROM} {where} GROUP BY r.id ORDER BY r.id", params
    )
    return [_rule(row) for row in rows]


def changed_rules(conn: sqlite3.Connection, since: int) -> list[tuple]:
    """(id, text, status, kernel_specific, support_tasks, last_seen, tasks as a JSON list,
    precision, ops, gpu_arch) of every rule whose revision is above ``since``. Lean: this feeds
    the index."""
    return conn.execute(
        """
        SELECT r.id, r.text, r.status, r.kernel_specific,
               r.imported_support + COUNT(DISTINCT f.task), r.last_seen,
               json_group_array(DISTINCT f.task) FILTER (WHERE f.task IS NOT NULL),
               r.precision, r.ops, r.gpu_arch
        FROM rules r
        LEFT JOIN rule_failures rf ON rf.rule_id = r.id
        LEFT JOIN failures f ON f.id = rf.failure_id
        WHERE r.revision > ?
        GROUP BY r.id
        """,
        (since,),
    ).fetchall()


def _rule(row: sqlite3.Row) -> Rule:
    return Rule(
        id=row["id"],
        text=row["text"],
        status=RuleStatus(row["status"]),
        support_tasks=row["linked_tasks"] + row["imported_support"],
        support_failures=row["support_failures"],
        kernel_specific=bool(row["kernel_specific"]),
        provenance=Provenance(row["provenance"]),
        first_seen=row["first_seen"],
        last_seen=row["last_seen"],
        tasks=sorted(json.loads(row["tasks"] or "[]")),
        environments=sorted(json.loads(row["environments"] or "[]")),
        context=_context(row),
    )
